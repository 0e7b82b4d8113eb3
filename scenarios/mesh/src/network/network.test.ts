import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConntrack } from './network.js';

test('network - a tracked connection shows what the process asked for and who answers: a redirected one, the link proxy', () => {
  const text = [
    'ipv4     2 tcp      6 431999 ESTABLISHED src=10.77.3.11 dst=10.77.3.12 sport=41234 dport=8080 src=10.77.3.1 dst=10.77.3.11 sport=20102 dport=41234 [ASSURED] mark=0 zone=0 use=2',
    'ipv4     2 tcp      6 117 TIME_WAIT src=127.0.0.1 dst=127.0.0.1 sport=50000 dport=27017 src=127.0.0.1 dst=127.0.0.1 sport=27017 dport=50000 [ASSURED] mark=0 zone=0 use=2',
    'ipv4     2 udp      17 29 src=10.77.3.11 dst=224.0.0.251 sport=5353 dport=5353 [UNREPLIED] src=224.0.0.251 dst=10.77.3.11 sport=5353 dport=5353 mark=0 zone=0 use=2',
    '',
  ].join('\n');
  assert.deepEqual(parseConntrack(text), [
    { src: '10.77.3.11', sport: 41234, dst: '10.77.3.12', dport: 8080, replySrc: '10.77.3.1', replySport: 20102, state: 'ESTABLISHED' },
    { src: '127.0.0.1', sport: 50000, dst: '127.0.0.1', dport: 27017, replySrc: '127.0.0.1', replySport: 27017, state: 'TIME_WAIT' },
  ]);
});
