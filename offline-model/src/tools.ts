// Maps a tool script (`{"tool":"read",...}`) onto the tools the request offers: the offered
// tool for the action and its parameters, filled from the tool's input_schema. Pure.
import type { MessagesRequest } from './request.ts';
import { workingDirectory } from './request.ts';
import type { ToolScript } from './script.ts';

type Tool = NonNullable<MessagesRequest['tools']>[number];

// Names in order of preference; matched case-insensitively.
const TOOL_NAMES = {
  read: ['read', 'read_file', 'readfile', 'view'],
  write: ['write', 'write_file', 'writefile', 'create_file'],
  list: ['ls', 'list', 'list_dir', 'list_directory'],
  glob: ['glob', 'find'],
  shell: ['bash', 'shell', 'run_shell_command', 'exec'],
} as const;

const PARAM_NAMES = {
  path: ['file_path', 'path', 'filePath', 'filename', 'file'],
  dir: ['path', 'dir', 'directory', 'dir_path'],
  content: ['content', 'contents', 'file_text', 'text'],
  command: ['command', 'cmd'],
  pattern: ['pattern', 'glob'],
} as const;

function findTool(tools: Tool[], names: readonly string[]): Tool | undefined {
  for (const name of names) {
    const t = tools.find((x) => x.name.toLowerCase() === name);
    if (t) return t;
  }
  return undefined;
}

function param(tool: Tool, candidates: readonly string[]): string | undefined {
  const props = Object.keys(tool.input_schema?.properties ?? {});
  return candidates.find((c) => props.includes(c));
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function posixJoin(dir: string, rel: string): string {
  const parts: string[] = [];
  for (const p of `${dir}/${rel}`.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return `/${parts.join('/')}`;
}

type ToolCall = { name: string; input: Record<string, unknown> } | { unavailable: string };

/**
 * Picks the offered tool for an action and fills its parameters from the
 * tool's input_schema. A `file_path` parameter is claude's, whose tools want
 * absolute paths, so relative paths are resolved against the announced cwd.
 */
export function mapTool(script: ToolScript, req: MessagesRequest): ToolCall {
  const tools = req.tools ?? [];
  const cwd = workingDirectory(req);
  const pathFor = (name: string, p: string): string =>
    name === 'file_path' && !p.startsWith('/') && cwd !== undefined ? posixJoin(cwd, p) : p;
  const shell = (command: string): ToolCall | undefined => {
    const t = findTool(tools, TOOL_NAMES.shell);
    const c = t && param(t, PARAM_NAMES.command);
    return t && c ? { name: t.name, input: { [c]: command } } : undefined;
  };
  const none = (what: string): ToolCall => ({
    unavailable: `Offline model: no offered tool can ${what} (offered: ${tools.map((t) => t.name).join(', ') || 'none'}).`,
  });

  switch (script.tool) {
    case 'read':
    case 'write': {
      const t = findTool(tools, TOOL_NAMES[script.tool]);
      const p = t && param(t, PARAM_NAMES.path);
      if (!t || !p) return none(script.tool === 'read' ? 'read a file' : 'write a file');
      if (script.tool === 'read') return { name: t.name, input: { [p]: pathFor(p, script.path) } };
      const c = param(
        t,
        PARAM_NAMES.content.filter((x) => x !== p),
      );
      if (!c) return none('write a file');
      return { name: t.name, input: { [p]: pathFor(p, script.path), [c]: script.content } };
    }
    case 'list': {
      const ls = findTool(tools, TOOL_NAMES.list);
      const lsDir = ls && param(ls, PARAM_NAMES.dir);
      if (ls && lsDir) return { name: ls.name, input: { [lsDir]: script.path } };
      const glob = findTool(tools, TOOL_NAMES.glob);
      const pattern = glob && param(glob, PARAM_NAMES.pattern);
      if (glob && pattern) {
        const dir = param(
          glob,
          PARAM_NAMES.dir.filter((x) => x !== pattern),
        );
        return dir
          ? { name: glob.name, input: { [pattern]: '*', [dir]: script.path } }
          : { name: glob.name, input: { [pattern]: `${script.path.replace(/\/+$/, '')}/*` } };
      }
      // claude 2.1.197 offers neither LS nor Glob; listing through the shell still exercises a tool.
      return shell(`ls -1a ${shellQuote(script.path)}`) ?? none('list a directory');
    }
    case 'shell':
      return shell(script.command) ?? none('run a shell command');
  }
}
