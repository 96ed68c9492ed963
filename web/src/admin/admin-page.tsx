import type { AdminTab } from '../router.ts';
import './admin.css';
import { ApprovalsPanel } from './approvals-panel.tsx';
import { AuditPanel } from './audit-panel.tsx';
import { BackendPanel } from './backend-panel.tsx';
import { LimitsPanel } from './limits-panel.tsx';
import { LiveSessionsPanel } from './live-sessions-panel.tsx';
import { UsersPanel } from './users-panel.tsx';

const TABS: Array<{ tab: AdminTab; label: string }> = [
  { tab: 'users', label: 'Users' },
  { tab: 'backend', label: 'Backend' },
  { tab: 'limits', label: 'Limits' },
  { tab: 'sessions', label: 'Live sessions' },
  { tab: 'audit', label: 'Audit log' },
];

/** The admin console. The API refuses non-admins on its own; the shell also never shows it to them. */
export function AdminPage({ tab }: { tab: AdminTab }) {
  return (
    <div class="page admin">
      <h1>Admin</h1>
      <nav class="tabs" aria-label="Admin sections">
        {TABS.map((t) => (
          <a key={t.tab} href={`/admin/${t.tab}`} class="tab" aria-current={t.tab === tab ? 'page' : undefined}>
            {t.label}
          </a>
        ))}
      </nav>
      {tab === 'users' && <UsersPanel />}
      {tab === 'backend' && <BackendPanel />}
      {tab === 'limits' && (
        <>
          <LimitsPanel />
          <ApprovalsPanel />
        </>
      )}
      {tab === 'sessions' && <LiveSessionsPanel />}
      {tab === 'audit' && <AuditPanel />}
    </div>
  );
}
