import { createApp } from './app.ts';
import { launcherProbe } from './hub/runtime.ts';

export { SessionHub } from './hub/session-hub.ts';

// The launcher is registered with `registerLauncherFactory` (edge/src/hub/runtime.ts); until
// one is, launches fail with a clear reason and the backend probe reports "not wired".
const app = createApp({ probeFor: launcherProbe });

export default { fetch: app.fetch } satisfies ExportedHandler<Env>;
