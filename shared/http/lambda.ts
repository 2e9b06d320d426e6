import { type App, idempotency, lambdaApp } from '../app.js';
import { httpPipeline } from './handler.js';

/** The HTTP pipeline on the App of the Lambda process: what every HTTP function's handler is made with. */
export const httpHandler = httpPipeline<App>({ app: lambdaApp, idempotency: (app) => app.use(idempotency) });
