// Paths the guard refuses even inside the session workspace, each with the
// reason it is refused. docs/DESIGN.md ("Sandbox") carries the same list; a
// test keeps the two in step. Matching is on path segments, case-sensitive
// except where noted, so `my.envelope` or `.sshrc-notes` do not match.
//
// This module is loaded by the runner (claude's guard) and by pi (its extension,
// under Node's type stripping): node builtins only, no enums.

export interface SensitivePattern {
  /** Stable name, quoted in DESIGN.md. */
  name: string;
  /** Why a coding agent must not read or write it. */
  reason: string;
  /** True when the segments (of a path relative to the workspace, or of an absolute path) hit this pattern. */
  matches(segments: readonly string[]): boolean;
}

const anySegment =
  (test: (s: string) => boolean) =>
  (segments: readonly string[]): boolean =>
    segments.some(test);

const basename =
  (test: (s: string) => boolean) =>
  (segments: readonly string[]): boolean => {
    const last = segments.at(-1);
    return last !== undefined && test(last);
  };

/** `a/b` appears as consecutive segments anywhere. */
const pair =
  (a: string, b: (s: string) => boolean) =>
  (segments: readonly string[]): boolean =>
    segments.some((s, i) => s === a && i + 1 < segments.length && b(segments[i + 1] ?? ''));

const is =
  (...names: string[]) =>
  (s: string) =>
    names.includes(s);

export const SENSITIVE_PATTERNS: readonly SensitivePattern[] = [
  {
    name: '.env*',
    reason: 'dotenv files (.env, .env.local, .envrc, ...) hold application secrets and API keys',
    matches: anySegment((s) => s.startsWith('.env')),
  },
  {
    name: '.ssh/',
    reason: 'SSH private keys, agent sockets and known hosts',
    matches: anySegment(is('.ssh')),
  },
  {
    name: 'id_rsa, id_ed25519, id_ecdsa, id_dsa',
    reason: 'SSH private keys kept outside ~/.ssh',
    matches: basename((s) => /^id_(rsa|dsa|ecdsa|ed25519)(_sk)?(\.pub)?$/.test(s)),
  },
  {
    name: '*.pem, *.key, *.p12, *.pfx, *.jks, *.keystore, *.kdbx',
    reason: 'private keys, certificate bundles with keys, Java keystores and password databases',
    matches: basename((s) => /\.(pem|key|p12|pfx|jks|keystore|kdbx|ppk)$/i.test(s)),
  },
  {
    name: '.aws/, .azure/, .config/gcloud/, .oci/, .kube/',
    reason: 'cloud and cluster credentials (AWS, Azure, Google Cloud, Oracle Cloud, Kubernetes)',
    matches: (seg) => anySegment(is('.aws', '.azure', '.oci', '.kube'))(seg) || pair('.config', is('gcloud'))(seg),
  },
  {
    name: 'application_default_credentials.json, *service-account*.json, credentials.json, client_secret*.json',
    reason: 'Google Cloud / OAuth credential files that projects often keep next to the code',
    matches: basename(
      (s) =>
        s === 'application_default_credentials.json' ||
        s === 'credentials.json' ||
        /^client_secret.*\.json$/i.test(s) ||
        /service[-_]?account.*\.json$/i.test(s),
    ),
  },
  {
    name: '.docker/config.json',
    reason: 'container registry credentials',
    matches: pair('.docker', is('config.json')),
  },
  {
    name: '.netrc, _netrc, .git-credentials, .git/config',
    reason: 'HTTP and git credentials (git remotes often embed tokens)',
    matches: (seg) => basename(is('.netrc', '_netrc', '.git-credentials'))(seg) || pair('.git', is('config'))(seg),
  },
  {
    name: '.npmrc, .yarnrc.yml, .pypirc, .gem/credentials, .cargo/credentials*, .m2/settings.xml, .gradle/gradle.properties',
    reason: 'package registry publish tokens',
    matches: (seg) =>
      basename(is('.npmrc', '.yarnrc.yml', '.pypirc'))(seg) ||
      pair('.gem', is('credentials'))(seg) ||
      pair('.cargo', (s) => s.startsWith('credentials'))(seg) ||
      pair('.m2', is('settings.xml', 'settings-security.xml'))(seg) ||
      pair('.gradle', is('gradle.properties'))(seg),
  },
  {
    name: '.config/gh/, .config/hub, .vault-token, .terraformrc, terraform.rc, credentials.tfrc.json, .boto, .s3cfg, .pgpass, .my.cnf, .htpasswd',
    reason:
      'developer-tool tokens and database passwords (GitHub CLI, Vault, Terraform, S3 tools, PostgreSQL, MySQL, Apache)',
    matches: (seg) =>
      pair('.config', is('gh', 'hub'))(seg) ||
      basename(
        is(
          '.vault-token',
          '.terraformrc',
          'terraform.rc',
          'credentials.tfrc.json',
          '.boto',
          '.s3cfg',
          '.pgpass',
          '.my.cnf',
          '.htpasswd',
        ),
      )(seg),
  },
  {
    name: '.gnupg/, .password-store/',
    reason: 'GPG private keys and pass(1) password stores',
    matches: anySegment(is('.gnupg', '.password-store')),
  },
  {
    name: '*.keychain, *.keychain-db, Keychains/, .local/share/keyrings/, kwalletd/',
    reason: 'OS keychains (macOS Keychain, GNOME Keyring, KWallet)',
    matches: (seg) =>
      basename((s) => /\.keychain(-db)?$/.test(s))(seg) ||
      anySegment(is('Keychains', 'kwalletd'))(seg) ||
      pair('share', is('keyrings'))(seg),
  },
  {
    name: '.claude/, .claude.json, .pi/, .codex/, .gemini/, .config/claude/',
    reason:
      "the agent CLIs' own configuration and auth files: settings can add hooks or permissions, auth files hold tokens",
    matches: (seg) =>
      anySegment(is('.claude', '.claude.json', '.pi', '.codex', '.gemini'))(seg) || pair('.config', is('claude'))(seg),
  },
  {
    name: '.switchyard/',
    reason: "Switchyard's own local state (the dev admin password file)",
    matches: anySegment(is('.switchyard')),
  },
];

/**
 * /proc is refused outright (the walker in resolve.ts stops at it): environ,
 * cmdline and mem of any process, and magic links (/proc/self/root, /cwd,
 * /fd/N) that resolve differently for the guard than for the tool.
 */
export const PROC_REASON =
  'process information under /proc (environ, cmdline, memory, magic links) is never readable by tools';

export function sensitiveMatch(segments: readonly string[]): SensitivePattern | undefined {
  return SENSITIVE_PATTERNS.find((p) => p.matches(segments));
}
