// Client-side routes. The Worker serves index.html for every path that is not an API route
// (SPA fallback), so each of these URLs survives a reload and can be shared as a deep link.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'signin'; next: string }
  | { page: 'home' }
  | { page: 'session'; id: string }
  | { page: 'tokens' }
  | { page: 'account' }
  | { page: 'admin'; tab: AdminTab }
  | { page: 'not-found'; path: string };

const ADMIN_TABS = ['users', 'backend', 'limits', 'sessions', 'audit'] as const;
export type AdminTab = (typeof ADMIN_TABS)[number];

/** The origin a path is resolved against to judge it; one of our own, whichever. */
const HERE = 'https://switchyard.invalid';

/**
 * Only same-site paths are followed after sign-in (no open redirect). Judged as the browser will
 * read them: it takes `/\evil.example` and `/<tab>/evil.example` for `//evil.example`.
 */
export function safeNext(next: string | null): string {
  if (!next?.startsWith('/')) return '/';
  let url: URL;
  try {
    url = new URL(next, HERE);
  } catch {
    return '/';
  }
  if (url.origin !== HERE || url.pathname.startsWith('/signin')) return '/';
  return `${url.pathname}${url.search}${url.hash}`;
}

export function parseRoute(pathname: string, search: string): Route {
  const parts = pathname.split('/').filter((p) => p !== '');
  if (parts.length === 0) return { page: 'home' };
  if (parts[0] === 'signin' && parts.length === 1)
    return { page: 'signin', next: safeNext(new URLSearchParams(search).get('next')) };
  if (parts[0] === 'sessions' && parts.length === 2 && /^[0-9A-HJKMNP-TV-Z]{26}$/.test(parts[1]!))
    return { page: 'session', id: parts[1]! };
  if (parts[0] === 'tokens' && parts.length === 1) return { page: 'tokens' };
  if (parts[0] === 'account' && parts.length === 1) return { page: 'account' };
  if (parts[0] === 'admin' && parts.length <= 2) {
    const tab = (parts[1] ?? 'users') as AdminTab;
    if (ADMIN_TABS.includes(tab)) return { page: 'admin', tab };
  }
  return { page: 'not-found', path: pathname };
}

const listeners = new Set<() => void>();

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
}

export function useRoute(): Route {
  const read = () => parseRoute(location.pathname, location.search);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const update = () => setRoute(read());
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** Same-origin link clicks go through the router; modified clicks open tabs as usual. */
export function onLinkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a');
  if (
    a === null ||
    a === undefined ||
    a.target === '_blank' ||
    a.origin !== location.origin ||
    a.hasAttribute('download')
  )
    return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}
