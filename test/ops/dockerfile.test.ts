import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { validate, ValidationSeverity } from 'dockerfile-utils';
import { DOCKERFILE, execForm, readDockerfile, runtimeStage } from '../helpers/dockerfile';

describe('Dockerfile', () => {
  const text = readFileSync(DOCKERFILE, 'utf8');
  const instructions = readDockerfile(text);
  const runtime = runtimeStage(instructions);
  const only = (keyword: string) => runtime.filter((instruction) => instruction.keyword === keyword);

  it('passes dockerfile-utils with every optional check made an error', () => {
    const everyCheck = {
      deprecatedMaintainer: ValidationSeverity.ERROR,
      directiveCasing: ValidationSeverity.ERROR,
      emptyContinuationLine: ValidationSeverity.ERROR,
      instructionCasing: ValidationSeverity.ERROR,
      instructionCmdMultiple: ValidationSeverity.ERROR,
      instructionEntrypointMultiple: ValidationSeverity.ERROR,
      instructionHealthcheckMultiple: ValidationSeverity.ERROR,
      instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
      instructionWorkdirRelative: ValidationSeverity.ERROR,
    };
    const problems = validate(text, everyCheck).map((problem) => `${problem.range.start.line + 1}: ${typeof problem.message === 'string' ? problem.message : problem.message.value}`);
    expect(problems).to.deep.equal([]);
  });

  it('builds in one stage and runs from another', () => {
    expect(instructions.filter((instruction) => instruction.keyword === 'FROM')).to.have.length(2);
    expect(runtime.some((instruction) => instruction.keyword === 'COPY' && instruction.args.startsWith('--from=build'))).to.equal(true);
  });

  it('runs as an unprivileged user, stops on SIGTERM, keeps data in a volume', () => {
    expect(only('USER').map((instruction) => instruction.args)).to.deep.equal(['node']);
    expect(only('STOPSIGNAL').map((instruction) => instruction.args)).to.deep.equal(['SIGTERM']);
    expect(only('VOLUME').map((instruction) => instruction.args)).to.deep.equal(['["/app/data"]']);
  });

  it('serves with umask 0077, the documented unit\'s UMask, and node as the process the stop signal reaches', () => {
    const [cmd] = only('CMD');
    const [shell, flag, script] = execForm(cmd.args);
    expect([shell, flag]).to.deep.equal(['/bin/sh', '-c']);
    expect(script).to.match(/^umask 0077 && exec node bin\/tollgate\.js serve$/);
  });

  it('checks its health on /readyz', () => {
    const [healthcheck] = only('HEALTHCHECK');
    expect(execForm(healthcheck.args).join(' ')).to.contain('/readyz');
  });
});
