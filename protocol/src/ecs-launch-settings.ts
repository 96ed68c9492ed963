import { z } from 'zod';

// The ECS settings of a deployment's runner launches, under the environment names both sides read
// them by: the edge's launcher names them in every RunTask, and the launch broker refuses a RunTask
// that names others (docs/DESIGN.md "Hardening" → "A leaked edge key running its own command").

/** A comma-separated list; blanks and empty items dropped. */
export const commaList = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== ''),
  );

export const AwsRegionSchema = z
  .string()
  .trim()
  .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be a region such as us-east-1');

export const EcsLaunchSettingsShape = {
  /** Cluster name or ARN. */
  ECS_CLUSTER: z.string().trim().min(1, 'required'),
  /** `family`, `family:revision` or a task definition ARN (its container runs `switchyard-runner`). */
  ECS_TASK_DEFINITION: z.string().trim().min(1, 'required'),
  /** The runner container's name in the task definition (the overrides address it). */
  ECS_CONTAINER_NAME: z.string().trim().min(1).default('runner'),
  /** Comma-separated subnet ids (awsvpc); private subnets are enough, the runner only dials out. */
  ECS_SUBNETS: commaList.pipe(z.array(z.string()).min(1, 'at least one subnet id is required')),
  /**
   * Comma-separated security group ids (egress only is enough). Required: a RunTask without one
   * puts the task in the VPC's default group, which lets every member reach every other (runners
   * of other sessions among them) and everything out.
   */
  ECS_SECURITY_GROUPS: commaList.pipe(z.array(z.string()).min(1, 'at least one security group id is required')),
  /** `ENABLED` only for public subnets without a NAT gateway. */
  ECS_ASSIGN_PUBLIC_IP: z.enum(['ENABLED', 'DISABLED']).default('DISABLED'),
  AWS_REGION: AwsRegionSchema,
};

/** The launch settings as both sides use them. */
export interface EcsLaunchSettings {
  cluster: string;
  taskDefinition: string;
  containerName: string;
  subnets: string[];
  securityGroups: string[];
  assignPublicIp: 'ENABLED' | 'DISABLED';
}

const EcsLaunchSettingsSchema = z.object(EcsLaunchSettingsShape);

export function launchSettingsOf(e: z.output<typeof EcsLaunchSettingsSchema>): EcsLaunchSettings {
  return {
    cluster: e.ECS_CLUSTER,
    taskDefinition: e.ECS_TASK_DEFINITION,
    containerName: e.ECS_CONTAINER_NAME,
    subnets: e.ECS_SUBNETS,
    securityGroups: e.ECS_SECURITY_GROUPS,
    assignPublicIp: e.ECS_ASSIGN_PUBLIC_IP,
  };
}
