import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adapterFor, type Backend, type Capabilities } from '@switchyard/protocol';
import { sandboxSetup, type SandboxSetup } from './capabilities.ts';
import { locateCli } from './cli/locate.ts';
import { cliSpawnSpec, makeCliDirs } from './cli/spawn.ts';
import { startReady } from './cli/start-ready.ts';
import type { CommonConfig } from './config.ts';
import { messageOf } from './errors.ts';
import type { Result } from './errors.ts';
import { runGuardCanary } from './sandbox/canary.ts';
import { startModelAccess } from './sandbox/model-proxy.ts';

export interface BackendReport {
  backend: Backend;
  installed: boolean;
  version: string | null;
  /** The CLI started with the runner's configuration and answered its readiness handshake. */
  configValid: boolean;
  /** Whether a model credential/endpoint is configured — never the value. */
  credentials: { present: boolean; source: 'model_url' | 'anthropic_api_key' | 'none' };
  guard: Capabilities['guard'];
  sandbox: Capabilities['sandbox'];
  usable: boolean;
  problems: string[];
}

export interface ProbeReport {
  ok: boolean;
  backends: BackendReport[];
}

const READY_TIMEOUT_MS = 30_000;

export async function probe(
  backends: Backend[],
  config: CommonConfig,
  baseEnv: Record<string, string | undefined>,
): Promise<ProbeReport> {
  // Sequential: two CLIs starting at once on a small box would slow each other's handshake.
  const reports: BackendReport[] = [];
  const sandbox = await sandboxSetup(baseEnv, backends);
  for (const backend of backends) reports.push(await probeOne(backend, config, baseEnv, sandbox));
  return { ok: reports.every((r) => r.usable), backends: reports };
}

async function probeOne(
  backend: Backend,
  config: CommonConfig,
  baseEnv: Record<string, string | undefined>,
  setup: Result<SandboxSetup>,
): Promise<BackendReport> {
  const source =
    config.model.kind === 'endpoint' ? 'model_url' : config.model.kind === 'provider' ? 'anthropic_api_key' : 'none';
  const report: BackendReport = {
    backend,
    installed: false,
    version: null,
    configValid: false,
    credentials: { present: source !== 'none', source },
    guard: setup.ok ? setup.value.capabilities.guard : 'missing',
    sandbox: setup.ok ? setup.value.capabilities.sandbox : 'none',
    usable: false,
    problems: [],
  };
  if (!setup.ok) {
    report.problems.push(setup.error.message);
    return report;
  }
  const sandbox = setup.value;
  let executable;
  try {
    executable = config.executableOverride ?? locateCli(backend);
    report.installed = true;
    report.version = executable.version;
  } catch (err) {
    report.problems.push(messageOf(err));
    return report;
  }
  const model = await startModelAccess(config.model, sandbox.sandbox.mode);
  if (!model.ok) {
    report.problems.push(model.error.message);
    return report;
  }
  const stateDir = await mkdtemp(join(tmpdir(), 'switchyard-probe-'));
  try {
    const spec = await cliSpawnSpec(
      {
        backend,
        executable,
        dirs: await makeCliDirs(stateDir),
        model: model.value,
        walls: sandbox,
        modelName: config.modelName,
        // serve's retry policy too: the probe proves the configuration serve starts the CLI with
        // (the policy is part of it: claude's environment, pi's settings.json), and its handshake
        // sends no model request, so the policy cannot slow it down.
        retry: config.retry,
        compileCache: config.cliCompileCache,
        baseEnv,
      },
      { oneShot: true },
    );
    // Started with the real configuration and stopped once it answered its readiness handshake.
    const started = await startReady(
      backend,
      spec,
      adapterFor(backend).createCodec(),
      { onEvent: () => {} },
      READY_TIMEOUT_MS,
    );
    if (started.ok) {
      started.proc.closeInput();
      started.proc.kill('SIGKILL');
      await started.proc.exited;
      report.configValid = true;
    } else report.problems.push(started.problem);
  } catch (err) {
    report.problems.push(`configuration rejected: ${messageOf(err)}`);
  } finally {
    await model.value.close();
    await rm(stateDir, { recursive: true, force: true }).catch(() => {});
  }
  // The guard must load in this CLI and block a canary call (the offline model scripts it; no credentials used).
  if (report.configValid) {
    const canary = await runGuardCanary({
      backend,
      executable,
      sandbox: sandbox.sandbox,
      compileCache: config.cliCompileCache,
      baseEnv,
    });
    report.guard = canary.ok ? 'loaded' : 'missing';
    if (!canary.ok) report.problems.push(`guard: ${canary.problem}`);
  }
  report.usable = report.installed && report.configValid && report.credentials.present && report.problems.length === 0;
  return report;
}
