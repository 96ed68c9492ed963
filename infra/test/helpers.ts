import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import nag from 'cdk-nag';
import { RunnerStack, type RunnerStackProps } from '../src/runner-stack.ts';

export interface CfnTemplate {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; Metadata?: Record<string, unknown> }>;
  Outputs?: Record<string, { Value: unknown; Description?: string }>;
}

export interface NagViolation {
  ruleName: string;
  description: string;
  resources: string[];
}

/** The edge origin every test stack is given (bin/app.ts takes it from `-c edgeOrigin=`). */
export const EDGE_ORIGIN = 'https://switchyard.example.com';

/** One synth of the stack with the AwsSolutions pack (as bin/app.ts runs it); the validation report's violations. */
export function synthWithNag(props: Partial<RunnerStackProps> = {}): {
  template: CfnTemplate;
  violations: NagViolation[];
  error: unknown;
} {
  const outdir = mkdtempSync(join(tmpdir(), 'sy-infra-'));
  try {
    const app = new App({ outdir });
    const stack = new RunnerStack(app, 'SwitchyardRunners', { edgeOrigin: EDGE_ORIGIN, ...props });
    Validations.of(app).addPlugins(new nag.AwsSolutionsChecks(app, { writeSuppressionsToCloudFormation: true }));
    let error: unknown;
    try {
      app.synth();
    } catch (e) {
      error = e;
    }
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: {
        violations: { ruleName: string; description: string; violatingResources: { resourceLogicalId: string }[] }[];
      }[];
    };
    const violations = report.pluginReports.flatMap((p) =>
      p.violations.map((v) => ({
        ruleName: v.ruleName,
        description: v.description,
        resources: v.violatingResources.map((r) => r.resourceLogicalId),
      })),
    );
    const template = JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.template.json`), 'utf8')) as CfnTemplate;
    return { template, violations, error };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
