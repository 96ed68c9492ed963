// The name of a session's owner, for an admin's read-only view of someone else's session: the
// session detail carries only the owner's id, the admin API names them. Null for one's own session,
// and until (or unless) the name is known.
import { useEffect, useState } from 'preact/hooks';
import { api, call } from '../api/client.ts';
import type { Me } from '../auth/me.ts';

export function useOwnerName(ownerId: string | undefined, me: Me): string | null {
  const [name, setName] = useState<{ id: string; username: string } | null>(null);
  useEffect(() => {
    if (ownerId === undefined || ownerId === me.id || me.role !== 'admin') return;
    let current = true;
    call(api.GET('/api/admin/users/{id}', { params: { path: { id: ownerId } } }))
      .then((u) => {
        if (current) setName({ id: ownerId, username: u.username });
      })
      .catch(() => undefined);
    return () => {
      current = false;
    };
  }, [ownerId, me.id, me.role]);
  // Another session's owner is never shown under this one's.
  return name !== null && name.id === ownerId ? name.username : null;
}
