// Shared by launcher.global-setup.ts (Node) and launch-broker.test.ts (workerd).

/** The broker's settings: what launch-broker.test.ts's launcher sends, pinned. */
export const BROKER_ENV = {
  ECS_CLUSTER: 'switchyard-local',
  ECS_TASK_DEFINITION: 'switchyard-runner',
  ECS_CONTAINER_NAME: 'runner',
  ECS_SUBNETS: 'subnet-0a1b,subnet-2c3d',
  ECS_SECURITY_GROUPS: 'sg-0e4f',
  ECS_ASSIGN_PUBLIC_IP: 'DISABLED',
  AWS_REGION: 'eu-central-1',
  // Nothing listens there: a launched runner keeps retrying, i.e. stays running until stopped.
  HUB_ORIGIN: 'http://127.0.0.1:9',
};
/** The key launch-broker.test.ts's launcher signs with (the edge's secrets in production). */
export const BROKER_KEY = { accessKeyId: 'switchyard-edge-test', secretAccessKey: 'workerd-broker-key' };
