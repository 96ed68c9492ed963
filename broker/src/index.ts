export {
  handleBrokerRequest,
  type BrokerDeps,
  type BrokerHttpRequest,
  type BrokerHttpResponse,
} from './broker.ts';
export { loadBrokerConfig, type BrokerConfig } from './config.ts';
export { checkRequest, type BrokerRules } from './rules.ts';
export { MAX_RUNNING_TASKS_RANGE, maxRunningTasksProblem } from './running-cap.ts';
