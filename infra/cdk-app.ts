import { messagingApp } from './stack/messaging-app.js';

// `npx cdk synth` / `deploy` run this (cdk.json); the CLI's context flags reach the app through it,
// and the region it deploys to (from the profile, AWS_REGION or --region) as CDK_DEFAULT_REGION.
messagingApp({}, { region: process.env.CDK_DEFAULT_REGION });
