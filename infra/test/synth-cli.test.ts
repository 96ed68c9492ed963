import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EDGE_ORIGIN, type CfnTemplate } from './helpers.ts';

// `cdk synth` through the real CLI (infra/cdk.json → bin/app.ts with the cdk-nag plugin), the
// way CI and an operator run it: offline — no telemetry, no notices, no lookups — with every
// proxy variable pointing at a closed loopback port, so any network call would fail it (the
// broker's bundling included: local esbuild, no Docker, no registry). It runs in a scratch
// project folder holding a copy of infra/cdk.json (its app named by absolute path), so a
// deployment's own infra/cdk.context.json (README "Deploying", step 1) never reaches these tests.
const infra = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = join(infra, '..');
const cdkBin = join(repoRoot, 'node_modules', '.bin', 'cdk');
const dead = 'http://127.0.0.1:9';

let project: string;
beforeEach(() => {
  project = mkdtempSync(join(tmpdir(), 'sy-cdk-project-'));
  const cdkJson = JSON.parse(readFileSync(join(infra, 'cdk.json'), 'utf8')) as { app: string };
  cdkJson.app = `node ${join(infra, 'bin', 'app.ts')}`;
  writeFileSync(join(project, 'cdk.json'), JSON.stringify(cdkJson));
});
afterEach(() => rmSync(project, { recursive: true, force: true }));

const cdkSynth = (...context: string[]) => {
  const out = join(project, 'out');
  const r = spawnSync(cdkBin, ['synth', '--no-notices', '--quiet', '--output', out, ...context], {
    cwd: project,
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
  return { ...r, out };
};

const templateIn = (out: string) =>
  JSON.parse(readFileSync(join(out, 'SwitchyardRunners.template.json'), 'utf8')) as CfnTemplate;

/** The sources of runner/Dockerfile's `COPY` lines that come from the build context (not `--from`). */
function contextSources(): string[] {
  return readFileSync(join(repoRoot, 'runner', 'Dockerfile'), 'utf8')
    .split('\n')
    .map((line) => /^COPY\s+(?!--from)(.+)\s+\S+\s*$/.exec(line.trim())?.[1])
    .filter((sources) => sources !== undefined)
    .flatMap((sources) => sources.split(/\s+/));
}

it('npx cdk synth works offline and passes the AwsSolutions checks', () => {
  const started = performance.now();
  const r = cdkSynth('-c', `edgeOrigin=${EDGE_ORIGIN}`);
  const ms = performance.now() - started;
  expect(`${r.stdout}${r.stderr}`).not.toMatch(/AwsSolutions-/);
  expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  const template = templateIn(r.out);
  expect(Object.values(template.Resources).filter((x) => x.Type === 'AWS::ECS::TaskDefinition')).toHaveLength(1);
  const functions = Object.values(template.Resources).filter((x) => x.Type === 'AWS::Lambda::Function');
  expect(
    functions.map((f) => (f.Properties?.Environment as { Variables?: Record<string, unknown> })?.Variables?.HUB_ORIGIN),
  ).toEqual([EDGE_ORIGIN]);
  console.log(`cdk synth (CLI, offline): ${(ms / 1000).toFixed(1)} s`);

  // What `cdk deploy` hands the image build: the context staged by .dockerignore. The build runs
  // `--file runner/Dockerfile` inside it, so the Dockerfile and everything it copies must be
  // there, and the local runner host must not.
  const assets = JSON.parse(readFileSync(join(r.out, 'SwitchyardRunners.assets.json'), 'utf8')) as {
    dockerImages: Record<string, { source: { directory: string; dockerFile: string } }>;
  };
  const images = Object.values(assets.dockerImages);
  expect(images).toHaveLength(1);
  const { directory, dockerFile } = (images[0] as (typeof images)[number]).source;
  const staged = join(r.out, directory);
  const sources = contextSources();
  expect(sources).toContain('runner/scripts');
  expect([dockerFile, ...sources].filter((p) => !existsSync(join(staged, p)))).toEqual([]);
  expect(existsSync(join(staged, 'runner', 'src', 'host'))).toBe(false);
  expect(existsSync(join(staged, 'infra'))).toBe(false);
});

it('npx cdk synth without edgeOrigin fails, naming it', () => {
  const r = cdkSynth();
  expect(r.status).not.toBe(0);
  expect(`${r.stdout}${r.stderr}`).toMatch(/Missing context edgeOrigin/);
});

it('a deployment’s context kept in cdk.context.json is read without -c (README "Deploying", step 1)', () => {
  const modelUrl = 'https://gateway.example.com/anthropic';
  const egressDomains = ['registry.npmjs.org'];
  writeFileSync(
    join(project, 'cdk.context.json'),
    JSON.stringify({ edgeOrigin: EDGE_ORIGIN, modelUrl, egressDomains, maxRunners: 40 }),
  );
  const r = cdkSynth();
  expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  const resources = Object.values(templateIn(r.out).Resources);
  const lists = resources.filter((x) => x.Type === 'AWS::Route53Resolver::FirewallDomainList');
  expect(lists.map((l) => l.Properties?.Domains)).toContainEqual(expect.arrayContaining(['registry.npmjs.org']));
  const [broker] = resources.filter((x) => x.Type === 'AWS::Lambda::Function');
  const brokerEnv = broker?.Properties?.Environment as { Variables: Record<string, string> } | undefined;
  expect(brokerEnv?.Variables).toMatchObject({
    MAX_RUNNING_TASKS: '40',
  });
  const [definition] = resources.filter((x) => x.Type === 'AWS::ECS::TaskDefinition');
  const containers = (definition?.Properties?.ContainerDefinitions ?? []) as Array<{
    Environment?: Array<{ Name: string; Value: string }>;
  }>;
  const [container] = containers;
  expect(container?.Environment).toContainEqual({ Name: 'SWITCHYARD_MODEL_URL', Value: modelUrl });
});
