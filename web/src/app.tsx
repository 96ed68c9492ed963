// The shell: who is signed in, the top bar, and which page the URL names. Nothing but the
// sign-in page renders until /api/me answers; any 401 later sends the person to sign-in and
// brings them back to the same URL afterwards.
import { useEffect, useRef, useState } from 'preact/hooks';
import { AccountPage } from './account/account-page.tsx';
import { AdminPage } from './admin/admin-page.tsx';
import { api, call, isApiError, setUnauthenticatedHandler } from './api/client.ts';
import { type Me, MeContext } from './auth/me.ts';
import { SignIn } from './auth/sign-in.tsx';
import { ChatPage } from './chat/chat-page.tsx';
import { navigate, onLinkClick, type Route, safeNext, useRoute } from './router.ts';
import { SessionSidebar } from './sessions/session-sidebar.tsx';
import { TokensPage } from './tokens/tokens-page.tsx';
import { MenuIcon } from './ui/icons.tsx';

type Auth = { state: 'loading' } | { state: 'out' } | { state: 'in'; me: Me } | { state: 'error'; message: string };

function toSignIn(): void {
  if (location.pathname === '/signin') return;
  navigate(`/signin?next=${encodeURIComponent(location.pathname + location.search)}`, { replace: true });
}

/** The width at which styles.css turns the session list into a drawer; keep the two in step. */
const PHONE = '(max-width: 760px)';

function useMediaQuery(query: string): boolean {
  const [matches, setMatches] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const list = matchMedia(query);
    const update = () => setMatches(list.matches);
    update();
    list.addEventListener('change', update);
    return () => list.removeEventListener('change', update);
  }, [query]);
  return matches;
}

export function App() {
  const route = useRoute();
  const [auth, setAuth] = useState<Auth>({ state: 'loading' });
  // The drawer is open for the route it was opened on: any navigation closes it in the same
  // render that shows the new page, so nothing the page focuses on mount lands in inert content.
  const [navOpenOn, setNavOpenOn] = useState<Route | null>(null);
  const navOpen = navOpenOn === route;
  const phone = useMediaQuery(PHONE);
  const toggle = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    setUnauthenticatedHandler(() => {
      setAuth({ state: 'out' });
      toSignIn();
    });
    call(api.GET('/api/me'))
      .then((me) => setAuth({ state: 'in', me }))
      .catch((e: unknown) => {
        if (isApiError(e) && e.status === 401) {
          setAuth({ state: 'out' });
          toSignIn();
        } else setAuth({ state: 'error', message: isApiError(e) ? e.message : 'cannot load' });
      });
  }, []);

  const drawer = phone && (route.page === 'home' || route.page === 'session');
  const drawerOpen = drawer && navOpen;
  const closeDrawer = (refocus: boolean) => {
    setNavOpenOn(null);
    if (refocus) toggle.current?.focus();
  };

  useEffect(() => {
    if (!drawerOpen) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented) return;
      setNavOpenOn(null);
      toggle.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [drawerOpen]);

  if (auth.state === 'loading') return <div class="splash" aria-busy="true" />;
  if (auth.state === 'error') {
    return (
      <main class="signin">
        <p class="form-error" role="alert">
          Switchyard cannot be reached: {auth.message}
        </p>
      </main>
    );
  }
  if (auth.state === 'out' || route.page === 'signin') {
    if (auth.state === 'in' && route.page === 'signin') {
      navigate(route.next, { replace: true });
      return null;
    }
    const next = route.page === 'signin' ? route.next : '/';
    return (
      <SignIn
        onSignedIn={(me) => {
          setAuth({ state: 'in', me });
          navigate(safeNext(next), { replace: true });
        }}
      />
    );
  }

  const me = auth.me;
  const signOut = async () => {
    await call(api.POST('/api/auth/logout')).catch(() => undefined);
    setAuth({ state: 'out' });
    navigate('/signin', { replace: true });
  };
  const withSidebar = route.page === 'home' || route.page === 'session';

  return (
    <MeContext.Provider value={me}>
      {/* Link clicks are routed here once instead of in every component. */}
      <div class="app" onClick={onLinkClick}>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="topbar">
          {withSidebar && (
            <button
              ref={toggle}
              type="button"
              class="icon-btn nav-toggle"
              aria-expanded={navOpen}
              aria-controls="sessions-nav"
              onClick={() => setNavOpenOn(navOpen ? null : route)}
            >
              <MenuIcon />
              <span class="sr-only">Sessions</span>
            </button>
          )}
          <a href="/" class="brand">
            <span class="brand-mark" aria-hidden="true" />
            Switchyard
          </a>
          <nav class="topnav" aria-label="Main">
            <a href="/" class="nav-sessions" aria-current={withSidebar ? 'page' : undefined}>
              Sessions
            </a>
            <a href="/tokens" aria-current={route.page === 'tokens' ? 'page' : undefined}>
              API tokens
            </a>
            {me.role === 'admin' && (
              <a href="/admin" aria-current={route.page === 'admin' ? 'page' : undefined}>
                Admin
              </a>
            )}
          </nav>
          <div class="topbar-user">
            <span class="username" title={`signed in as ${me.username} (${me.role})`}>
              {me.username}
            </span>
            <a href="/account" class="account-link" aria-current={route.page === 'account' ? 'page' : undefined}>
              Account
            </a>
            <button type="button" class="btn small" onClick={signOut}>
              Sign out
            </button>
          </div>
        </header>
        <div class={withSidebar ? `layout with-sidebar${navOpen ? ' nav-open' : ''}` : 'layout'}>
          {withSidebar && (
            <SessionSidebar
              currentId={route.page === 'session' ? route.id : null}
              // Off screen but not gone: without this, Tab would walk into links nobody can see.
              inert={drawer && !drawerOpen}
              onNavigate={() => closeDrawer(false)}
            />
          )}
          {drawerOpen && (
            <button
              type="button"
              class="drawer-backdrop"
              aria-label="Close sessions"
              onClick={() => closeDrawer(true)}
            />
          )}
          {/* Covered by the open drawer's backdrop, so out of reach like any modal's background. Preact's
              JSX types lack `inert`; the spread passes it through as the DOM property. */}
          <main id="main" class="content" tabIndex={-1} {...{ inert: drawerOpen }}>
            {route.page === 'home' && <Home />}
            {route.page === 'session' && <ChatPage key={route.id} sessionId={route.id} />}
            {route.page === 'tokens' && <TokensPage />}
            {route.page === 'account' && <AccountPage />}
            {route.page === 'admin' &&
              (me.role === 'admin' ? <AdminPage tab={route.tab} /> : <NotFound path="/admin" />)}
            {route.page === 'not-found' && <NotFound path={route.path} />}
          </main>
        </div>
      </div>
    </MeContext.Provider>
  );
}

function Home() {
  return (
    <div class="empty-state">
      <h1>Start a session</h1>
      <p>Pick a session on the left, or press New session to talk to a coding agent.</p>
    </div>
  );
}

function NotFound({ path }: { path: string }) {
  return (
    <div class="empty-state">
      <h1>Not found</h1>
      <p>
        Nothing lives at <code>{path}</code>. <a href="/">Back to sessions</a>
      </p>
    </div>
  );
}
