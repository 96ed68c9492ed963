import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeTranscriptPath } from '@switchyard/protocol';
import { DROP_TO_RUNNER } from './fixtures/image-uids.ts';

// Container mode with the image's real uids (needs root to make them; skipped otherwise): what
// the runner (uid 10001) restores for its CLI (uid 10002, the runner's group) the CLI can change,
// and the spawn's preparation changes the rights of the CLI's three folders only, never of what
// is inside them: a walk inside, by path, followed a folder the CLI swapped for a link and made
// the runner's own state folder group-writable (then the CLI could put a link in place of the
// runner's config dir, and the runner read and wrote wherever it pointed).

const isRoot = process.getuid?.() === 0;
const fixture = fileURLToPath(new URL('./fixtures/container-restore.ts', import.meta.url));
const AS_CLI = ['--reuid', '10002', '--regid', '10001', '--clear-groups', '--inh-caps', '-all', '--'];

let root = '';
beforeAll(() => {
  // The image's layout in miniature (runner/Dockerfile): /home/switchyard and its state folder
  // 0710, the runner's; in it the CLI's home and config dir, and a folder only the runner uses.
  root = mkdtempSync(join(tmpdir(), 'sy-modes-'));
  chmodSync(root, 0o755);
  for (const d of ['home/state/home', 'home/state/cli/runner-only', 'ws'])
    mkdirSync(join(root, d), { recursive: true });
  for (const d of ['home', 'home/state', 'home/state/home', 'home/state/cli', 'home/state/cli/runner-only', 'ws'])
    chownSync(join(root, d), 10001, 10001);
  chmodSync(join(root, 'home'), 0o710);
  chmodSync(join(root, 'home/state'), 0o710);
  for (const d of ['home/state/home', 'home/state/cli', 'home/state/cli/runner-only', 'ws'])
    chmodSync(join(root, d), 0o700);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function run(as: string[], command: string, args: string[]) {
  return spawnSync('/usr/bin/setpriv', [...as, command, ...args], { encoding: 'utf8', cwd: root });
}

describe.skipIf(!isRoot)('container mode: what the runner makes for its CLI', () => {
  it('restored files and the transcript are the CLI’s to change; nothing inside its folders is re-moded at a spawn', () => {
    const restore = run(DROP_TO_RUNNER, process.execPath, [fixture, root]);
    expect(restore.status, restore.stderr).toBe(0);
    const { resumeId } = JSON.parse(restore.stdout) as { resumeId: string };
    const transcript = claudeTranscriptPath(join(root, 'home/state/cli'), join(root, 'ws'), resumeId);

    // The CLI edits a restored file, adds one beside it and one at the top, and goes on with the
    // restored conversation.
    const cli = run(AS_CLI, '/bin/sh', [
      '-c',
      `echo edited >> ws/src/app.js && echo new > ws/src/new.js && echo top > ws/top.js && echo more >> ${transcript}`,
    ]);
    expect(cli.status, cli.stderr).toBe(0);
    expect(readFileSync(join(root, 'ws/src/app.js'), 'utf8')).toBe('restored\nedited\n');
    expect(readFileSync(transcript, 'utf8')).toBe('{"type":"user"}\nmore\n');

    // The CLI's three folders are its group's; the folder inside that only the runner made keeps
    // its mode, and so do the runner's own state folders.
    const mode = (p: string) => (statSync(join(root, p)).mode & 0o777).toString(8);
    expect(['ws', 'home/state/home', 'home/state/cli'].map(mode)).toEqual(['770', '770', '770']);
    expect(['home/state/cli/runner-only', 'home', 'home/state'].map(mode)).toEqual(['700', '710', '710']);
  });
});
