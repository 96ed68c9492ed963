import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Schemas } from '../api/client.ts';

export type Me = Schemas['Me'];

export const MeContext = createContext<Me | null>(null);

/** The signed-in user; only used below the shell, which renders nothing else until it is known. */
export function useMe(): Me {
  const me = useContext(MeContext);
  if (me === null) throw new Error('useMe outside a signed-in page');
  return me;
}
