import { unwiredProbe, type BackendProbe } from '../settings/backend-probe.ts';
import type { Launcher } from './launcher.ts';

/**
 * The backend switch's probe, answered by the launcher (DESIGN.md "Launchers"): the runner
 * image's own `probe` mode, run where the runners run. A launcher without `probe` cannot verify
 * anything and says so. Wire it as `createApp({ probeFor: (env) => launcherProbe(launcherFor(env)) })`.
 */
export function launcherProbe(launcher: Launcher): BackendProbe {
  return {
    probe: (backend) => (launcher.probe ? launcher.probe(backend) : unwiredProbe.probe(backend)),
  };
}
