# Runs on the GPU machine (Python with `tokenizers`, `transformers`, `jinja2`): produces the
# reference outputs that our tokenizer and chat renderer are tested against.
#   python3 scripts/oracle/hf-oracle.py OUTDIR
import json, sys, os
from tokenizers import Tokenizer

out = sys.argv[1]
tok = Tokenizer.from_file('fixtures/tinyA/tokenizer.json')
texts = json.load(open('fixtures/tokenizer/extra-cases.json'))

# chat rendering with transformers' own Jinja environment (sandboxed, trim_blocks, its tojson)
template = open('fixtures/templates/qwen3.6.jinja').read()
try:
    from transformers.utils.chat_template_utils import _compile_jinja_template
    compiled = _compile_jinja_template(template)
    engine = 'transformers._compile_jinja_template'
except Exception as e:  # noqa
    raise SystemExit(f'cannot load transformers chat template utils: {e}')

import transformers
rendered = []
for c in json.load(open('fixtures/chat/conversations.json')):
    kw = dict(c.get('kwargs', {}))
    try:
        text = compiled.render(messages=c['messages'], tools=c.get('tools'), add_generation_prompt=c['add_generation_prompt'], **kw)
        rendered.append({'name': c['name'], 'text': text})
        texts.append(text)
    except Exception as e:  # template errors (raise_exception) and type errors
        rendered.append({'name': c['name'], 'error': str(e)})

cases = []
for t in texts:
    ids = tok.encode(t, add_special_tokens=False).ids
    cases.append({'text': t, 'ids': ids, 'decoded': tok.decode(ids, skip_special_tokens=False)})

meta = {'tokenizers': __import__('tokenizers').__version__, 'transformers': transformers.__version__, 'jinja2': __import__('jinja2').__version__, 'engine': engine}
json.dump({'meta': meta, 'cases': cases}, open(os.path.join(out, 'hf-tokenizer-cases.json'), 'w'), ensure_ascii=False, indent=0)
json.dump({'meta': meta, 'rendered': rendered}, open(os.path.join(out, 'hf-chat-rendered.json'), 'w'), ensure_ascii=False, indent=1)
print(meta, len(cases), 'tokenizer cases,', len(rendered), 'conversations,', sum('error' in r for r in rendered), 'errors')
