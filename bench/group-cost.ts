import { FUNCTION_SETTINGS } from '../infra/declarations/function-settings.js';
import { PRICES } from './cost.js';
import { REALTIME_PRICES } from './realtime.js';
import { round } from './stats.js';

/**
 * What one upload costs in DynamoDB and Lambda, from what was measured: the
 * units its calls consumed and each invocation's duration (the upload's
 * handler and the fan-out's), each billed as Lambda bills it (rounded up to
 * the ms, at the stack's memory and architecture). The large groups' bench
 * (large-groups.ts) holds a group upload against a direct one with it.
 */
export interface UploadDollars {
  dynamodb: number;
  lambda: number;
  total: number;
}

export function uploadDollars(units: { readUnits: number; writeUnits: number }, invocationsMs: readonly number[]): UploadDollars {
  const dynamodb = (units.readUnits * PRICES.dynamoReadUnitPerMillion + units.writeUnits * PRICES.dynamoWriteUnitPerMillion) / 1e6;
  const billedMs = invocationsMs.reduce((sum, ms) => sum + Math.ceil(ms), 0);
  const gbSeconds = (FUNCTION_SETTINGS.memoryMb / 1024) * (billedMs / 1000);
  const lambda =
    (invocationsMs.length * PRICES.lambdaRequestPerMillion) / 1e6 + gbSeconds * PRICES.lambdaGbSecond[FUNCTION_SETTINGS.architecture];
  return { dynamodb: round(dynamodb, 12), lambda: round(lambda, 12), total: round(dynamodb + lambda, 12) };
}

/**
 * AppSync Events' price of one upload's push to a large group's channel:
 * one publish, and one delivery per connected subscriber (each an operation).
 */
export function groupPushDollars(connectedMembers: number, prices = REALTIME_PRICES): { operations: number; dollars: number } {
  const operations = 1 + connectedMembers;
  return { operations, dollars: round((operations * prices.appsyncOperationPerMillion) / 1e6, 8) };
}

/** The goal: a large group's upload costs at most 3 × a direct one (DynamoDB and Lambda), every inbox current within 2 s. */
export const LARGE_GROUP_GOAL = { maxCostRatio: 3, maxLastMemberMs: 2_000 };

export function meetsGoal(direct: UploadDollars, group: { cost: UploadDollars; lastMemberMs: number }) {
  const costRatio = round(group.cost.total / direct.total, 2);
  return {
    costRatio,
    met: costRatio <= LARGE_GROUP_GOAL.maxCostRatio && group.lastMemberMs <= LARGE_GROUP_GOAL.maxLastMemberMs,
  };
}
