import { RemovalPolicy } from 'aws-cdk-lib';

/**
 * What happens to a stateful resource (table, bucket, log group, secret,
 * queue) when the stack goes: an ephemeral dev stack takes it along, any
 * other keeps it (StackSettings.ephemeral).
 */
export const removalPolicyFor = (ephemeral: boolean): RemovalPolicy => (ephemeral ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN);
