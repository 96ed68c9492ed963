import { createApp } from './app.ts';

export { SessionHub } from './hub/session-hub.ts';

const app = createApp();

export default { fetch: app.fetch } satisfies ExportedHandler<Env>;
