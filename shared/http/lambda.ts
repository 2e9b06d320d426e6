import { type Composition, idempotency, lambdaComposition } from '../app.js';
import { httpPipeline } from './handler.js';

/** The HTTP pipeline on the Composition of the Lambda process: what every HTTP function's handler is made with. */
export const httpHandler = httpPipeline<Composition>({
  composition: lambdaComposition,
  idempotency: (composition) => composition.use(idempotency),
});
