import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adapterFor, type AgentEvent, type Backend, type Capabilities } from '@switchyard/protocol';
import { sandboxSetup, type SandboxSetup } from './capabilities.ts';
import { CliProcess } from './cli/cli-process.ts';
import { locateCli } from './cli/locate.ts';
import { cliSpawnSpec, makeCliDirs } from './cli/spawn.ts';
import { readinessFor } from './cli/readiness.ts';
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
        baseEnv,
      },
      { oneShot: true },
    );
    const problem = await handshake(backend, spec, adapterFor(backend).createCodec());
    if (problem) report.problems.push(problem);
    else report.configValid = true;
  } catch (err) {
    report.problems.push(`configuration rejected: ${messageOf(err)}`);
  } finally {
    await model.value.close();
    await rm(stateDir, { recursive: true, force: true }).catch(() => {});
  }
  // The guard must load in this CLI and block a canary call (the offline model scripts it; no credentials used).
  if (report.configValid) {
    const canary = await runGuardCanary({ backend, executable, sandbox: sandbox.sandbox, baseEnv });
    report.guard = canary.ok ? 'loaded' : 'missing';
    if (!canary.ok) report.problems.push(`guard: ${canary.problem}`);
  }
  report.usable = report.installed && report.configValid && report.credentials.present && report.problems.length === 0;
  return report;
}

/** Starts the CLI with the real configuration and waits for its readiness answer; returns a problem or undefined. */
async function handshake(
  backend: Backend,
  spec: Parameters<typeof CliProcess.start>[0],
  codec: Parameters<typeof CliProcess.start>[1],
): Promise<string | undefined> {
  const readiness = readinessFor(backend);
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const errors: string[] = [];
  const onEvent = (e: AgentEvent) => {
    if (e.type === 'error') errors.push(e.message);
    if (readiness.isReady(undefined, e)) ready();
  };
  let proc: CliProcess;
  try {
    proc = await CliProcess.start(spec, codec, {
      onEvent,
      onLine: (dir, line) => dir === 'out' && readiness.isReady(line, undefined) && ready(),
    });
  } catch (err) {
    return `cannot start the CLI: ${messageOf(err)}`;
  }
  for (const line of readiness.lines) proc.writeControl(line);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    isReady.then(() => 'ready' as const),
    proc.exited.then(() => 'exited' as const),
    new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), READY_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  proc.closeInput();
  proc.kill('SIGKILL');
  const exit = await proc.exited;
  if (outcome === 'ready') return undefined;
  const stderr = exit.stderrHead.trim().split('\n', 1)[0] ?? '';
  if (outcome === 'timeout')
    return `the CLI did not answer its readiness handshake within ${READY_TIMEOUT_MS / 1000} s`;
  return `the CLI exited during startup${stderr ? `: ${stderr}` : errors[0] ? `: ${errors[0]}` : ''}`;
}
