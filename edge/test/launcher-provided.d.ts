// What edge/test/launcher.global-setup.ts provides to the workerd tests.
import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    launcherHost: { url: string; recorderUrl: string; stsUrl: string; brokerUrl: string };
  }
}
