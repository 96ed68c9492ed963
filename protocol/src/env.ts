/**
 * The CLI's environment is built from scratch: only these names are copied
 * from the runner's environment. Everything else (runner token, cloud and
 * provider credentials) stays out by construction.
 */
export const INHERITED_ENV = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TERM'] as const;

export function allowListedEnv(
  baseEnv: Record<string, string | undefined>,
  extra: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = baseEnv[name];
    if (value !== undefined) env[name] = value;
  }
  if (env.PATH === undefined) env.PATH = '/usr/local/bin:/usr/bin:/bin';
  return { ...env, ...extra };
}
