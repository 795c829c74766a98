// The shell: login (token → session cookie), navigation by URL hash, the
// light/dark toggle, and the views. The signed-in principal's scopes decide
// which action buttons exist; the API refuses the rest anyway.

import { useCallback, useEffect, useState } from 'react';
import { ApiError, call, type Me } from './api';
import { LiveProvider, useLive } from './live';
import { ErrorNote } from './ui';
import { Overview } from './views/Overview';
import { Hosts } from './views/Hosts';
import { Groups } from './views/Groups';
import { Instances } from './views/Instances';
import { InstancePage } from './views/Instance';
import { Templates } from './views/Templates';
import { Audit } from './views/Audit';
import { Tokens } from './views/Tokens';

type Theme = 'system' | 'light' | 'dark';

function useHashRoute(): string[] {
  const read = () => (window.location.hash.replace(/^#\/?/, '') || 'overview').split('/').map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function useTheme(): [Theme, (t: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(() => (localStorage.getItem('endercloud-theme') as Theme | null) ?? 'system');
  useEffect(() => {
    if (theme === 'system') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    localStorage.setItem('endercloud-theme', theme);
  }, [theme]);
  return [theme, setTheme];
}

export function App() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [theme, setTheme] = useTheme();
  useEffect(() => {
    // 200 {authenticated: false} without a session: no failed request in the console at first load.
    call('GET /session', {}).then(
      (s) => setMe(s.authenticated ? s : null),
      () => setMe(null),
    );
  }, []);
  const signedOut = useCallback(() => setMe(null), []);
  if (me === undefined)
    return (
      <main className="center" aria-busy="true">
        <p>Loading…</p>
      </main>
    );
  if (me === null) return <Login onLogin={setMe} theme={theme} setTheme={setTheme} />;
  return (
    <LiveProvider onUnauthorized={signedOut}>
      <Shell me={me} onLogout={signedOut} theme={theme} setTheme={setTheme} />
    </LiveProvider>
  );
}

function ThemeToggle({ theme, setTheme }: { theme: Theme; setTheme: (t: Theme) => void }) {
  return (
    <label className="theme">
      <span className="sr-only">Colour theme</span>
      <select value={theme} onChange={(e) => setTheme(e.target.value as Theme)} aria-label="Colour theme">
        <option value="system">System theme</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}

function Login({ onLogin, theme, setTheme }: { onLogin: (me: Me) => void; theme: Theme; setTheme: (t: Theme) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <main className="center">
      <form
        className="card login"
        onSubmit={(e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          call('POST /session', {}, { body: { token: token.trim() } })
            .then(onLogin, setError)
            .finally(() => setBusy(false));
        }}
      >
        <h1>EnderCloud</h1>
        <p className="muted">
          Sign in with an API token (the admin token is in <code>&lt;data dir&gt;/admin-token</code>). It is exchanged for a session cookie
          and not kept in the browser.
        </p>
        <label className="field">
          <span>API token</span>
          <input
            type="password"
            name="token"
            autoComplete="current-password"
            value={token}
            onChange={(e) => setToken(e.target.value)}
            required
            autoFocus
          />
        </label>
        <ErrorNote error={error} />
        <div className="row between">
          <ThemeToggle theme={theme} setTheme={setTheme} />
          <button className="btn btn-primary" type="submit" disabled={busy || token.trim() === ''}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </div>
      </form>
    </main>
  );
}

const NAV: ReadonlyArray<[path: string, label: string, need?: string]> = [
  ['overview', 'Overview'],
  ['hosts', 'Hosts'],
  ['groups', 'Groups & fleets'],
  ['instances', 'Instances'],
  ['templates', 'Templates & layers'],
  ['audit', 'Audit log', 'admin'],
  ['tokens', 'Tokens', 'admin'],
];

/** The sections this principal may open; any other route (an admin page left in the URL by the last user) lands on the overview. */
function sectionsFor(me: Me): string[] {
  return NAV.filter(([, , need]) => need !== 'admin' || me.scopes.includes('admin')).map(([path]) => path);
}

function Shell({ me, onLogout, theme, setTheme }: { me: Me; onLogout: () => void; theme: Theme; setTheme: (t: Theme) => void }) {
  const route = useHashRoute();
  const { connected } = useLive();
  const [menu, setMenu] = useState(false);
  const [error, setError] = useState<unknown>();
  const allowed = sectionsFor(me);
  const asked = route[0] ?? 'overview';
  const section = allowed.includes(asked) ? asked : 'overview';
  useEffect(() => {
    if (section !== asked) window.location.replace('#/overview');
  }, [section, asked]);
  useEffect(() => setMenu(false), [section, route[1]]);
  useEffect(() => {
    document.title = `${NAV.find(([p]) => p === section)?.[1] ?? 'EnderCloud'} · EnderCloud`;
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [section, route[1]]);
  return (
    <div className="shell">
      <a
        className="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="top">
        <button type="button" className="btn menu-btn" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <span className="brand">EnderCloud</span>
        <span className={connected ? 'live live-on' : 'live'} role="status" aria-live="polite">
          {connected ? 'Live' : 'Reconnecting…'}
        </span>
        <span className="who" title={me.scopes.join(', ')}>
          {me.name} <span className="muted">({me.scopes.join(', ')})</span>
        </span>
        <ThemeToggle theme={theme} setTheme={setTheme} />
        <button
          type="button"
          className="btn"
          onClick={() => {
            // The next person to sign in starts on the overview, not on the page this one left (an admin page, say).
            const out = () => {
              window.history.replaceState(null, '', '#/overview');
              onLogout();
            };
            call('DELETE /session', {}).then(out, (err: unknown) =>
              err instanceof ApiError && err.status === 401 ? out() : setError(err),
            );
          }}
        >
          Sign out
        </button>
      </header>
      <ErrorNote error={error} />
      <nav id="nav" className={menu ? 'nav open' : 'nav'} aria-label="Sections">
        <ul>
          {NAV.filter(([path]) => allowed.includes(path)).map(([path, label]) => (
            <li key={path}>
              <a href={`#/${path}`} aria-current={section === path ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" className="main" tabIndex={-1}>
        {section === 'overview' && <Overview />}
        {section === 'hosts' && <Hosts me={me} />}
        {section === 'groups' && <Groups me={me} />}
        {section === 'instances' && route[1] === undefined && <Instances me={me} />}
        {section === 'instances' && route[1] !== undefined && <InstancePage me={me} id={route[1]} tab={route[2]} />}
        {section === 'templates' && <Templates />}
        {section === 'audit' && <Audit />}
        {section === 'tokens' && <Tokens />}
      </main>
    </div>
  );
}
