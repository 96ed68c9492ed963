// `cdk synth` / `cdk deploy` entry (infra/cdk.json). Environment-agnostic: the account and
// region come from the deploying credentials, and nothing is looked up, so synth runs offline.
// Context, from infra/cdk.context.json (README "Deploying", step 1) or `-c key=value`:
// `edgeOrigin` (required: the deployed Worker's origin), `prefix` (default switchyard),
// `modelUrl` (a model gateway), `egressDomains` (the runners' DNS allow-list beyond their own needs),
// `maxRunners` (the ceiling on running runner tasks).
import { App, Validations } from 'aws-cdk-lib';
import nag from 'cdk-nag';
import { checkEgressDomains } from '../src/egress-firewall.ts';
import { RunnerStack } from '../src/runner-stack.ts';

const app = new App();
const context = (key: string): string | undefined => {
  const v: unknown = app.node.tryGetContext(key);
  return typeof v === 'string' && v !== '' ? v : undefined;
};
const edgeOrigin = context('edgeOrigin');
if (edgeOrigin === undefined) {
  // No default: the broker pins runners' hub to this origin, and a guess would pin the wrong one.
  throw new Error(
    'Missing context edgeOrigin: the https origin of the deployed edge Worker, in infra/cdk.context.json (`{"edgeOrigin": "https://switchyard.example.com"}`) or as `-c edgeOrigin=…` (README "Deploying", step 1)',
  );
}
const prefix = context('prefix');
const modelUrl = context('modelUrl');
const egressDomains = checkEgressDomains(app.node.tryGetContext('egressDomains'));
// A number in cdk.context.json, a string after -c.
const maxRunnersValue: unknown = app.node.tryGetContext('maxRunners');
const maxRunners = maxRunnersValue === undefined ? undefined : Number(maxRunnersValue);
// A prefix names a separate stack, so a second deployment in one account never updates the first.
new RunnerStack(app, prefix === undefined ? 'SwitchyardRunners' : `SwitchyardRunners-${prefix}`, {
  description: 'Switchyard runners: VPC, ECS Fargate cluster and task definition, model key, launch broker',
  edgeOrigin,
  ...(prefix === undefined ? {} : { prefix }),
  ...(modelUrl === undefined ? {} : { modelUrl }),
  ...(egressDomains === undefined ? {} : { egressDomains }),
  ...(maxRunners === undefined ? {} : { maxRunners }),
});
// Every synth is checked (CDK policy validation): an unacknowledged AwsSolutions finding fails
// `cdk synth` and `cdk deploy`.
Validations.of(app).addPlugins(new nag.AwsSolutionsChecks(app, { verbose: true }));
