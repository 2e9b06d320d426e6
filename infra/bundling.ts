/**
 * How every function is bundled: one set of esbuild settings shared by the
 * CDK stack (NodejsFunction, local esbuild, no Docker) and the benchmark, so
 * the bench measures the bundles that deploy.
 */
/** Keep in step with the stack's Lambda runtime (Node.js 24). */
export const LAMBDA_NODE_TARGET = 'node24';

export const bundleSettings = {
  platform: 'node' as const,
  target: LAMBDA_NODE_TARGET,
  format: 'esm' as const,
  minify: true,
  sourcemap: true,
  // Prefer ES modules so the AWS SDK v3 tree-shakes.
  mainFields: ['module', 'main'],
  // ESM bundles of CommonJS dependencies still call require() for Node built-ins.
  banner: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  // Bundle the AWS SDK instead of using the runtime's copy: pinned versions, smaller cold start.
  // Except the credential providers Lambda never reaches: its credentials are in the environment,
  // the first link of the default chain, and these are only import()ed past it. Bundled, they
  // add ~115 KB (STS, SSO and sign-in clients) to every function (measured by `npm run bench`).
  external: [
    '@aws-sdk/credential-provider-ini',
    '@aws-sdk/credential-provider-process',
    '@aws-sdk/credential-provider-sso',
    '@aws-sdk/credential-provider-web-identity',
  ] as string[],
};

/**
 * What a deployed function's directory holds: the ESM bundle as `index.js`
 * beside a package.json that declares it a module. CDK names ESM bundles
 * `index.mjs`, which Lambda runs but `sam local` has failed to load; a `.js`
 * file under `"type": "module"` is ESM to Node and an ordinary handler file
 * (`index.handler`) to every tool.
 */
export const bundleLayout = {
  file: 'index.js',
  packageJson: { type: 'module' },
} as const;
