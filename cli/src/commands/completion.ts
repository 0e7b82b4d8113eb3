/**
 * `syncmesh completion bash|zsh`: a completion script made from the verbs' declarations (args.ts),
 * so it offers exactly what the parser takes. Node ids come from the mesh description at the time
 * of completing (`syncmesh mesh --ids`, with the --mesh given on the line), never from a node.
 *
 *   source <(bin/syncmesh completion bash)        # or put it in ~/.bash_completion
 *   source <(bin/syncmesh completion zsh)         # zsh, through its bashcompinit
 */
import { EXIT } from '@syncmesh-edge/log/exit';
import { GLOBAL_OPTIONS, type OptionSpec, type PositionalSpec, type VerbSpec } from '../args.js';
import type { Context, Verb } from '../context.js';
import type { VerbOutcome } from '../output.js';

export const SHELLS = ['bash', 'zsh'] as const;

function valuesOf(c: OptionSpec['complete'] | PositionalSpec['complete']): string {
  if (c === 'node') return 'COMPREPLY=($(compgen -W "$(_syncmesh_ids)" -- "$cur"))';
  if (c === 'file') return 'COMPREPLY=($(compgen -f -- "$cur"))';
  if (Array.isArray(c)) return `COMPREPLY=($(compgen -W "${c.join(' ')}" -- "$cur"))`;
  return 'COMPREPLY=()';
}

/** The bash completion function for these verbs. */
export function bashCompletion(verbs: readonly VerbSpec[]): string {
  const names = verbs.map((v) => v.name).join(' ');
  const verbCases = verbs.map((v) => {
    const options = { ...GLOBAL_OPTIONS, ...v.options };
    const flags = Object.entries(options)
      .flatMap(([k, o]) => [`--${k}`, ...(o.short ? [`-${o.short}`] : [])])
      .join(' ');
    const takesValue = Object.entries(options).filter(([, o]) => o.type === 'string');
    const valueCases = takesValue.map(([k, o]) => `        --${k}) ${valuesOf(o.complete)}; return ;;`).join('\n');
    const positionalCases = v.positionals
      .map((p, i) => `        ${p.rest ? '*' : String(i)}) ${valuesOf(p.complete)} ;;`)
      .concat(v.positionals.some((p) => p.rest) ? [] : ['        *) COMPREPLY=() ;;'])
      .join('\n');
    const valued = takesValue.map(([k]) => `--${k}`).join('|') || '--never';
    return `    ${v.name})
      case "$prev" in
${valueCases}
      esac
      if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "${flags}" -- "$cur")); return; fi
      # the position of this word among the arguments (option values left out)
      local n=0 i
      for ((i = 2; i < COMP_CWORD; i++)); do
        case "\${COMP_WORDS[i]}" in
          ${valued}) ((i++)) ;;
          -*) ;;
          *) ((n++)) ;;
        esac
      done
      case $n in
${positionalCases}
      esac ;;`;
  });
  return `# bash completion for syncmesh (made by: syncmesh completion bash)
_syncmesh_ids() {
  local i mesh=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ \${COMP_WORDS[i]} == --mesh ]] && mesh=(--mesh "\${COMP_WORDS[i + 1]}")
  done
  "\${COMP_WORDS[0]}" mesh --ids "\${mesh[@]}" 2>/dev/null
}
_syncmesh() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD - 1]}"
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W "${names} --help --version" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${verbCases.join('\n')}
  esac
}
complete -o default -F _syncmesh syncmesh
`;
}

const spec: VerbSpec = {
  name: 'completion',
  summary: 'A shell completion script: source <(syncmesh completion bash)',
  details: 'bash, and zsh through its bashcompinit. Node ids are completed from the mesh description.',
  options: {},
  positionals: [{ name: 'shell', description: 'the shell', required: true, complete: SHELLS }],
  examples: ['source <(bin/syncmesh completion bash)', 'bin/syncmesh completion bash > ~/.local/share/bash-completion/completions/syncmesh'],
};

export function completionVerb(verbs: () => readonly VerbSpec[]): Verb {
  return {
    spec,
    async run(_ctx: Context, args): Promise<VerbOutcome> {
      const bash = bashCompletion(verbs());
      // complete(1) registers the name; a launcher called by its path (bin/syncmesh) is registered too
      const script = `${bash}complete -o default -F _syncmesh bin/syncmesh\n`;
      const text =
        args.positionals[0] === 'zsh'
          ? `# zsh completion for syncmesh (bash's, through bashcompinit)\nautoload -U +X bashcompinit && bashcompinit\n${script}`
          : script;
      return { code: EXIT.OK, result: { shell: args.positionals[0], script: text }, text: text.trimEnd() };
    },
  };
}
