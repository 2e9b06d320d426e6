import { lazyVerifier } from '../shared/auth/verifier-settings.js';
import { type Config, lambdaConfig } from '../shared/config.js';
import { authorizeRealtime, type EventApiAuthorizerEvent, type EventApiAuthorizerResult } from '../shared/realtime/authorization.js';

type RealtimeAuthorizer = (event: EventApiAuthorizerEvent) => Promise<EventApiAuthorizerResult>;

/** The Event API's Lambda authorizer on a configuration's `auth` settings, read once per cold start as the REST authorizer reads them. */
function realtimeAuthorizer(config: () => Config): RealtimeAuthorizer {
  const verifier = lazyVerifier(() => config().auth);
  return (event) => authorizeRealtime(event, verifier);
}

/** On Lambda: the process's configuration. The local server runs it on the configuration of its Composition (withConfig). */
export const handler = Object.assign(realtimeAuthorizer(lambdaConfig), {
  withConfig: (config: Config) => realtimeAuthorizer(() => config),
});
