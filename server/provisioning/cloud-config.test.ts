import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseCloudConfig, type WrittenFile } from '../../test/cloud-config';
import { renderCloudConfig, TOKEN_FILE } from './cloud-config';

const token = 'bcjt_jt_01kabcdefghjkmnpqrstvwxyz0.S3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3t0';
const params = {
  nodeId: 'node_01kabcdefghjkmnpqrstvwxyz0',
  poolId: 'pool_01kabcdefghjkmnpqrstvwxyz0',
  token,
  serverUrl: 'https://compute.example.com',
  basePath: '/api/compute',
  pins: {
    servingCaPin: `sha256/${'A'.repeat(43)}=`,
    joinSigningKeyPin: `sha256/${'B'.repeat(43)}=`,
    joinEncryptionKeyPin: `sha256/${'C'.repeat(43)}=`,
  },
  bcdVersion: '0.1.0',
  sha256: { amd64: 'a'.repeat(64) },
  generatedBy: 'better-compute 0.1.0',
};
const hasShellcheck = spawnSync('shellcheck', ['--version']).status === 0;
const hasPyYaml = spawnSync('python3', ['-c', 'import yaml']).status === 0;
const installScript = () =>
  (parseCloudConfig(renderCloudConfig(params)).write_files as WrittenFile[]).find((f) => f.path.endsWith('install-bcd.sh'))!.content;

describe('renderCloudConfig', () => {
  it.runIf(hasPyYaml)('is YAML that PyYAML (what cloud-init reads it with) parses to the same document', () => {
    const text = renderCloudConfig(params);
    const read = spawnSync('python3', ['-c', 'import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))'], {
      input: text,
      encoding: 'utf8',
    });
    expect(read.status, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout)).toEqual(parseCloudConfig(text));
  });

  it('holds the token only as the content of the 0400 token file', () => {
    const text = renderCloudConfig(params);
    const doc = parseCloudConfig(text);
    const files = doc.write_files as WrittenFile[];
    expect(files.find((f) => f.path === TOKEN_FILE)).toEqual({
      path: TOKEN_FILE,
      owner: 'root:root',
      permissions: '0400',
      content: `${token}\n`,
    });
    expect(text.split(token).length).toBe(2);
    expect(JSON.stringify(doc.runcmd)).not.toContain('S3cr3t');
  });

  it.runIf(hasShellcheck)('installs bcd with a POSIX sh script that shellcheck passes', () => {
    const result = spawnSync('shellcheck', ['--shell=sh', '--severity=style', '-'], { input: installScript(), encoding: 'utf8' });
    expect(result.stdout).toBe('');
    expect(result.status).toBe(0);
  });

  it('refuses to embed what is not a join token, or a value that breaks out of its shell quotes', () => {
    expect(() => renderCloudConfig({ ...params, token: 'bcjt_x\n  - [rm, -rf, /]' })).toThrow(/not a join token/);
    expect(() => renderCloudConfig({ ...params, bcdVersion: "0.1.0'; id; '" })).toThrow(/Refusing to embed/);
  });
});
