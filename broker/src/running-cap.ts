// The deployment's ceiling on runner tasks (docs/DESIGN.md "A leaked edge key running its own
// command" → "A ceiling on running tasks"): a leaked broker key can start only runners, but as
// many as it likes, and each one costs. Before a RunTask the broker counts the cluster's tasks
// whose desired status is RUNNING (on their way up included), page by page, and stops counting
// once the count reaches the cap. Pure but for the page fetcher it is given.

export interface TaskPage {
  taskArns: string[];
  nextToken?: string | undefined;
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
