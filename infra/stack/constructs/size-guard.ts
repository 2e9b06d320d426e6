import type { Stage } from 'aws-cdk-lib/aws-apigateway';
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { type Condition, sizeGuardRules } from '../../declarations/size-guard.js';

/** WAF's own limit on a RegexMatchStatement's RegexString. */
const WAF_MAX_REGEX_CHARS = 200;

export interface SizeGuardProps {
  stage: Stage;
}

/**
 * The size guard on AWS: a regional web ACL on the API's stage, its rules
 * rendered from infra/declarations/size-guard.ts. WAF evaluates a request before API
 * Gateway handles it; a blocked request gets the stage's WAF_FILTERED gateway
 * response (413 body_too_large, infra/declarations/gateway-responses.ts), which, unlike a
 * WAF custom response, can carry the request id.
 */
export class SizeGuard extends Construct {
  readonly webAcl: CfnWebACL;

  constructor(scope: Construct, id: string, props: SizeGuardProps) {
    super(scope, id);
    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      scope: 'REGIONAL',
      // CloudFormation's pattern for a description admits no parentheses.
      description: 'Refuses request bodies whose Lambda event could exceed 6 MB, see infra/declarations/size-guard.ts',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('SizeGuard'),
      rules: webAclRules(),
    });
    const association = new CfnWebACLAssociation(this, 'StageAssociation', {
      resourceArn: props.stage.stageArn,
      webAclArn: this.webAcl.attrArn,
    });
    // The stage ARN is built from names, not a reference: the stage must exist first.
    association.node.addDependency(props.stage);
  }
}

export function webAclRules(): CfnWebACL.RuleProperty[] {
  return sizeGuardRules.map((rule, priority) => ({
    name: rule.name,
    priority,
    action: { block: {} },
    statement: wafStatement(rule.condition),
    visibilityConfig: visibility(rule.name),
  }));
}

const visibility = (metricName: string): CfnWebACL.VisibilityConfigProperty => ({
  cloudWatchMetricsEnabled: true,
  metricName,
  sampledRequestsEnabled: true,
});

// WAF compares header values as received: no transformation, so the patterns mean what they say.
const asReceived = [{ priority: 0, type: 'NONE' }];

/** A guard condition as a WAF statement. SingleHeader and Method are untyped in CDK: their keys are CloudFormation's. */
export function wafStatement(condition: Condition): CfnWebACL.StatementProperty {
  if ('all' in condition) return { andStatement: { statements: condition.all.map(wafStatement) } };
  if ('any' in condition) return { orStatement: { statements: condition.any.map(wafStatement) } };
  if ('not' in condition) return { notStatement: { statement: wafStatement(condition.not) } };
  if ('method' in condition)
    return {
      regexMatchStatement: { fieldToMatch: { method: {} }, regexString: checked(condition.method), textTransformations: asReceived },
    };
  const fieldToMatch = { singleHeader: { Name: condition.header } };
  if ('present' in condition) {
    // AWS's example for "the header is there": its size is greater than 0; an absent header never matches.
    return { sizeConstraintStatement: { fieldToMatch, comparisonOperator: 'GT', size: 0, textTransformations: asReceived } };
  }
  return { regexMatchStatement: { fieldToMatch, regexString: checked(condition.matches), textTransformations: asReceived } };
}

function checked(pattern: string): string {
  if (pattern.length > WAF_MAX_REGEX_CHARS)
    throw new Error(`WAF takes regular expressions of at most ${WAF_MAX_REGEX_CHARS} characters: ${pattern}`);
  return pattern;
}
