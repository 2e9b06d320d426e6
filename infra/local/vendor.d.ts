// Type declarations for the local stand-ins, which ship none.
declare module '@20minutes/s3rver' {
  import type { AddressInfo } from 'node:net';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: (string | Buffer)[] }[];
  }
  export default class S3rver {
    constructor(options?: S3rverOptions);
    /** Koa's middleware list; the router is the last entry. */
    middleware: unknown[];
    store: import('./s3-multipart.js').MultipartStore;
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
    /** Koa's emitter: s3rver emits 'event' with an S3 event notification for each object it writes or removes. */
    on(event: 'event', listener: (event: never) => void): this;
  }
}

declare module '@20minutes/s3rver/lib/models/account.js' {
  interface AWSAccount {
    createKeyPair(accessKeyId: string, secretAccessKey: string): void;
  }
  /** The account s3rver serves every authenticated request as; it knows only the key pairs registered on it. */
  export const DUMMY_ACCOUNT: AWSAccount;
}

declare module '@20minutes/s3rver/lib/models/error.js' {
  /** s3rver renders a thrown S3Error as S3's XML error with its status. */
  export default class S3Error extends Error {
    constructor(code: string, message?: string, detail?: Record<string, unknown>);
  }
}

declare module '@20minutes/s3rver/lib/utils.js' {
  /** Reads the request's XML body into ctx.request.body (MalformedXML when it is not XML). */
  export function xmlBodyParser(ctx: unknown): Promise<void>;
}
