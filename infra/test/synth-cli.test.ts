import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

// `cdk synth` through the real CLI (infra/cdk.json → bin/app.ts with the cdk-nag plugin), the
// way CI and an operator run it: offline — no telemetry, no notices, no lookups — with every
// proxy variable pointing at a closed loopback port, so any network call would fail it.
it('npx cdk synth works offline and passes the AwsSolutions checks', () => {
  const infra = fileURLToPath(new URL('..', import.meta.url));
  const out = mkdtempSync(join(tmpdir(), 'sy-cdk-synth-'));
  try {
    const dead = 'http://127.0.0.1:9';
    const started = performance.now();
    const r = spawnSync('npx', ['cdk', 'synth', '--no-notices', '--quiet', '--output', out], {
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
    const ms = performance.now() - started;
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/AwsSolutions-/);
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    const template = JSON.parse(readFileSync(join(out, 'SwitchyardRunners.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string }>;
    };
    expect(Object.values(template.Resources).filter((x) => x.Type === 'AWS::ECS::TaskDefinition')).toHaveLength(1);
    console.log(`cdk synth (CLI, offline): ${(ms / 1000).toFixed(1)} s`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
