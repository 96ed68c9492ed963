import { lstatSync, mkdtempSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { writeConfigFile } from '../../src/cli/cli-process.ts';

describe('CLI config files', () => {
  test('a symlink the CLI left at a config path is replaced, never written through', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-cfg-'));
    // What the agent wants the runner to overwrite (in a container: the runner's own files).
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'original');
    const path = join(dir, 'config', 'settings.json');
    await writeConfigFile({ path, content: 'first' });
    symlinkSync(victim, join(dir, 'config', 'planted'));
    // The CLI replaces its settings file with a symlink to the victim.
    renameSync(join(dir, 'config', 'planted'), path);
    expect(lstatSync(path).isSymbolicLink()).toBe(true);
    await writeConfigFile({ path, content: '{"hooks":{}}', mode: 0o600 });
    expect(readFileSync(victim, 'utf8')).toBe('original');
    expect(lstatSync(path).isFile()).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('{"hooks":{}}');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // A dangling symlink (to a file that would be created) is handled the same way.
    symlinkSync(join(dir, 'created-by-runner'), join(dir, 'config', 'dangling'));
    renameSync(join(dir, 'config', 'dangling'), path);
    await writeConfigFile({ path, content: 'x' });
    expect(() => statSync(join(dir, 'created-by-runner'))).toThrow();
  });
});
