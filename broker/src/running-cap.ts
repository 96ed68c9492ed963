// The deployment's ceiling on runner tasks (docs/DESIGN.md "A leaked edge key running its own
// command" → "A ceiling on running tasks"): a leaked broker key can start only runners, but as
// many as it likes, and each one costs. Before a RunTask the broker counts the cluster's tasks
// whose desired status is RUNNING (on their way up included), page by page, and stops counting
// once the count reaches the cap. Pure but for the page fetcher it is given.

export interface TaskPage {
  taskArns: string[];
  nextToken?: string | undefined;
}

/**
 * The ceilings a deployment may set (`MAX_RUNNING_TASKS`, the stack's `maxRunners`) and the one it
 * gets by default: far above a small team's sessions and a full pool.
 */
export const MAX_RUNNING_TASKS_RANGE = { min: 1, max: 5000, default: 200 } as const;

/** What a ceiling must be, as a refusal says it. */
export const MAX_RUNNING_TASKS_RULE = `must be a whole number from ${MAX_RUNNING_TASKS_RANGE.min} to ${MAX_RUNNING_TASKS_RANGE.max}`;

/** Why `value` is no ceiling, or null when it is one. */
export function maxRunningTasksProblem(value: number): string | null {
  const { min, max } = MAX_RUNNING_TASKS_RANGE;
  return Number.isInteger(value) && value >= min && value <= max ? null : MAX_RUNNING_TASKS_RULE;
}

/** ListTasks' largest page. */
export const LIST_PAGE_SIZE = 100;

/** The cluster's running tasks, counted up to `cap` (a count of `cap` means "at least"). */
export async function countRunning(
  listPage: (nextToken: string | undefined) => Promise<TaskPage>,
  cap: number,
): Promise<number> {
  let count = 0;
  let token: string | undefined;
  do {
    const page = await listPage(token);
    count += page.taskArns.length;
    token = page.nextToken;
  } while (token !== undefined && count < cap);
  return Math.min(count, cap);
}

/** The ListTasks body for one page: the one cluster, desired RUNNING. */
export function listTasksBody(cluster: string, nextToken: string | undefined): Record<string, unknown> {
  return {
    cluster,
    desiredStatus: 'RUNNING',
    maxResults: LIST_PAGE_SIZE,
    ...(nextToken !== undefined && { nextToken }),
  };
}
