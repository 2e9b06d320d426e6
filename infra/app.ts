import { messagingApp } from './application.js';

// `npx cdk synth` / `deploy` run this (cdk.json); the CLI's context flags reach the app through it.
messagingApp();
