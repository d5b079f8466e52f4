// One log line per request, with what an operator asks of it: which operation, which key's
// owner, what status, how long. Headers are never logged, so no key can leak through a log.
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'

export interface CompletedRequest {
  /** Given where the logger does not bind it already (the hot path logs through the root logger). */
  requestId?: string
  operation: string
  method: string
  url: string | undefined
  status: number
  elapsedMs: number
  apiKeyName: string | undefined
  remoteAddress: string | undefined
}

/** The fields of the `request completed` line, in their order, whichever path answered. */
export function requestLine(r: CompletedRequest) {
  return {
    requestId: r.requestId,
    operation: r.operation,
    method: r.method,
    url: r.url,
    status: r.status,
    durationMs: Math.round(r.elapsedMs * 100) / 100,
    apiKeyName: r.apiKeyName,
    remoteAddress: r.remoteAddress,
  }
}

export class RequestLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = requestLine({
      // The same name the metrics use: `unknown` when no route matched.
      operation: request.routeOptions.config.operation ?? 'unknown',
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      elapsedMs: reply.elapsedTime,
      apiKeyName: request.apiKey?.name,
      remoteAddress: request.ip,
    })
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}
