/** What the browser tests ask the Uppy page (page.ts) and what it answers. */
export interface UploadRequest {
  api: string;
  token: string;
  /** The file is made in the page: `size` bytes from a seeded generator, the same for the same seed. */
  size: number;
  seed: number;
  /** Resume this session instead of starting one (what a page does after a reload). */
  resumeSessionId?: string;
  /** Stop (as a closed tab would) once this many parts are in. */
  stopAfterParts?: number;
}

export interface UploadOutcome {
  sessionId: string;
  sha256: string;
  partsUploaded: number;
  attachment?: { id: string; file_url: string; file_size: number; file_type: string };
  error?: string;
}
