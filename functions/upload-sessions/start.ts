import { conversationReads, uploadSessions } from '../../shared/app.js';
import { httpHandler } from '../../shared/http/lambda.js';
import { readParams } from '../../shared/http/params.js';
import { formOrJsonBody } from '../../shared/http/request.js';
import { created } from '../../shared/http/response.js';
import { StartUploadSession } from '../../shared/routes.js';
import { sessionRequestOf, startParams } from '../../shared/uploads/start-params.js';

export const handler = httpHandler(StartUploadSession, {
  input: (request, composition) => sessionRequestOf(readParams(formOrJsonBody(request), startParams(composition.config.maxUploadBytes))),
  run: async (session, request, composition) =>
    created(await composition.use(uploadSessions).start(request.caller, session, composition.use(conversationReads))),
});
