import { authenticate, requireAdmin } from './auth/middleware.ts';
import { auditRoutes } from './audit/routes.ts';
import { newRouter, type AppDeps } from './context.ts';
import { poolAdminRoutes } from './pool/routes.ts';
import { adminSessionRoutes } from './sessions/admin-routes.ts';
import { adminSettingsRoutes } from './settings/routes.ts';
import { userRoutes } from './users/routes.ts';

/** Everything under /api/admin: one gate (authenticated + admin) in front of every admin route. */
export function adminRoutes(deps: AppDeps) {
  const app = newRouter();
  app.use('*', authenticate(deps), requireAdmin);
  app.route('/users', userRoutes(deps));
  app.route('/settings', adminSettingsRoutes(deps));
  app.route('/audit', auditRoutes());
  app.route('/sessions', adminSessionRoutes());
  app.route('/runner-pool', poolAdminRoutes(deps));
  return app;
}
