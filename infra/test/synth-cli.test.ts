import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { EDGE_ORIGIN } from './helpers.ts';

// `cdk synth` through the real CLI (infra/cdk.json → bin/app.ts with the cdk-nag plugin), the
// way CI and an operator run it: offline — no telemetry, no notices, no lookups — with every
// proxy variable pointing at a closed loopback port, so any network call would fail it (the
// broker's bundling included: local esbuild, no Docker, no registry).
const infra = fileURLToPath(new URL('..', import.meta.url));
const dead = 'http://127.0.0.1:9';
const cdkSynth = (out: string, ...context: string[]) =>
  spawnSync('npx', ['cdk', 'synth', '--no-notices', '--quiet', '--output', out, ...context], {
    cwd: infra,
    encoding: 'utf8',
    env: {
      ...process.env,
      CDK_DISABLE_CLI_TELEMETRY: 'true',
      HTTPS_PROXY: dead,
      HTTP_PROXY: dead,
      https_proxy: dead,
      http_proxy: dead,
      NO_PROXY: '',
    },
  });

it('npx cdk synth works offline and passes the AwsSolutions checks', () => {
  const out = mkdtempSync(join(tmpdir(), 'sy-cdk-synth-'));
  try {
    const started = performance.now();
    const r = cdkSynth(out, '-c', `edgeOrigin=${EDGE_ORIGIN}`);
    const ms = performance.now() - started;
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/AwsSolutions-/);
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    const template = JSON.parse(readFileSync(join(out, 'SwitchyardRunners.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    expect(Object.values(template.Resources).filter((x) => x.Type === 'AWS::ECS::TaskDefinition')).toHaveLength(1);
    const functions = Object.values(template.Resources).filter((x) => x.Type === 'AWS::Lambda::Function');
    expect(
      functions.map((f) => (f.Properties.Environment as { Variables: Record<string, unknown> }).Variables.HUB_ORIGIN),
    ).toEqual([EDGE_ORIGIN]);
    console.log(`cdk synth (CLI, offline): ${(ms / 1000).toFixed(1)} s`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

it('npx cdk synth without -c edgeOrigin fails, naming it', () => {
  const out = mkdtempSync(join(tmpdir(), 'sy-cdk-synth-'));
  try {
    const r = cdkSynth(out);
    expect(r.status).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toMatch(/Missing context edgeOrigin/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
