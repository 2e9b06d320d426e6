import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Credentials } from '../s3/signer.js';
import { signedPost } from '../signed-post.js';
import type { Rescans } from './recorder.js';

const TIMEOUT_MS = 5_000;

/**
 * GuardDuty's SendObjectMalwareScan (POST /object-malware-scan/send, REST
 * JSON, SigV4 as `guardduty`): a new scan of one object of a bucket its
 * malware protection plan covers, whose result arrives as any other. Sent
 * with the recorder's own credentials, without the SDK's client in its bundle.
 */
export class GuardDutyRescans implements Rescans {
  private readonly url: URL;
  private readonly signer: SignatureV4;

  /** `endpoint`: GuardDuty's regional one, or a stand-in's (GUARDDUTY_ENDPOINT). */
  constructor(region: string, credentials: Credentials, endpoint = `https://guardduty.${region}.amazonaws.com`) {
    this.url = new URL('/object-malware-scan/send', endpoint);
    this.signer = new SignatureV4({ service: 'guardduty', region, credentials, sha256: Sha256 });
  }

  async askAgain(bucket: string, key: string): Promise<void> {
    const body = JSON.stringify({ s3Object: { bucket, key } });
    const response = await signedPost(this.signer, this.url, { 'content-type': 'application/json' }, body, TIMEOUT_MS);
    if (!response.ok) throw new Error(`SendObjectMalwareScan answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  }
}
