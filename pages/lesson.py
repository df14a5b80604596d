"""Lesson: the person's own sentence through the Transformer, one step of the lecture at a time (explorer/teaching/lesson.py
has the steps and their numbers; this page draws them, keeps the step in the URL and links each to its deep view)."""

import streamlit as st

from explorer.capture.input_kinds import IMAGE, input_kind
from explorer.figures.lesson import LESSON_CSS
from explorer.pages.components import url_state
from explorer.pages.components.image_input_section import traced_image
from explorer.pages.components.lesson_step_section import show_step
from explorer.pages.components.notices import pruning_notice
from explorer.pages.components.presentation import scroll_to_new_step, step_keys
from explorer.pages.components.session import chosen_model
from explorer.pages.components.traces import current_trace
from explorer.teaching.handout import handout_html
from explorer.teaching.image_lesson import lesson_for
from explorer.teaching.lesson_steps import SHORT_TITLES, Focus

# The choices' boxes are not drawn while there is no sentence (an empty one stops the page): Streamlit would drop their
# state then, and a box drawn again from a value set just before it shows its first option while the page follows
# the value. Set by the page itself each run, the state outlives a run without the boxes.
for box in ("lesson_word", "lesson_layer", "lesson_head", "lesson_output_step", "lesson_step"):
    if box in st.session_state:
        st.session_state[box] = st.session_state[box]
model = chosen_model()
image = input_kind(model) is IMAGE     # a digit through a Vision Transformer: the same steps, on patches
# Projector mode presents: the step comes first, on the class's first screen; what it follows is chosen below it,
# under a one-line title (the full one took two 55 px lines at 1024 × 768) and less space above it.
projector = bool(st.session_state.get("projector"))
if projector:
    st.html("<style>[data-testid='stMainBlockContainer'] { padding-top: 1.5rem; }</style>")
    st.markdown(f"**Lesson: your {'digit' if image else 'sentence'} through the "
                f"{'Vision Transformer' if image else 'Transformer'}**")
else:
    st.title("Lesson: your digit through a Vision Transformer" if image else
             "Lesson: your sentence through the Transformer")
step_area = st.container()
if not projector:
    st.caption(f"Follow your {'digit' if image else 'sentence'} through the model in a lecture's order. Each step "
               "says what happens in plain words, shows this model's real numbers and one small figure, and links to "
               "the page that shows it in full. Move with ◀ Previous / Next ▶ (or the ← and → keys), or jump with "
               "the list of steps; " + ("choose a digit just below." if image else "type your own sentence in the "
                                        "sidebar."))
label = None                    # a held-out digit's own label
if image:
    checkpoint, (trace, label) = model, traced_image(model)
else:
    checkpoint, trace = current_trace(pruned=())  # the model as trained: a lecture explains every head at work
pruning_notice(checkpoint, "full", "the Lesson walks the model as trained, every head at work. The Translation, "
               "Attention and Prune pages show what pruning changes.")
if image:
    verdict = "" if label is None else f" · labelled {label} " + ("✓" if label == trace.output_text else "✗")
    st.markdown(f"**The model's class: {trace.output_text}** ({trace.steps[0].chosen_prob:.0%}){verdict}")
elif trace.output_text:
    st.markdown(f"**The model's {trace.output_title.lower() if trace.output_title != 'German' else 'German'}:**")
    st.text(trace.output_text)
lesson = lesson_for(checkpoint, trace, label)
slugs = lesson.slugs
default = lesson.default_focus()
st.html(LESSON_CSS)


def head_choice() -> tuple[int, int]:
    """The layer and head the steps follow: the URL's `head=kind.layer.head` (any kind: the numbers carry over)."""
    parts = url_state.saved("head").split(".")
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2])
    return default.layer, default.head


# A choice the person made goes into the URL through its widget's on_change; a default is not published, since it
# would move the other pages that share `query=`, `head=` and `step=`.
# -- what the steps follow: a word, a layer and head, an output step (kept in the URL once chosen) --
layer, head = head_choice()
word_column, layer_column, head_column, step_column = st.columns([3, 2, 2, 3])
url_state.kept("lesson_word", "query", range(len(lesson.words)), default=default.word, tokens=lesson.words)
word = word_column.selectbox("Token to follow" if image else "Word to follow",
                             range(len(lesson.words)), key="lesson_word",
                             format_func=lambda i: f"{i}: {lesson.words[i]}",
                             on_change=lambda: url_state.keep("query", st.session_state["lesson_word"]),
                             help="The token whose query the steps follow: 0 is the class token, then the patches "
                                  "row by row (r3c2 = row 3, column 2, counted from 0 at the top left)." if image else
                                  "The piece whose query the attention steps follow (a query asks: which other "
                                  "pieces matter to me?).")
def linked_choice(key: str, value: int, count: int) -> None:
    """The link's layer or head wins over its box when this model has it: a model that had fewer clamped the box,
    and the link's choice comes back on a model that can take it (the URL is written only by the person's own
    change of the box, keep_head)."""
    if url_state.saved("head") and value < count and st.session_state.get(key) != value:
        st.session_state[key] = value


linked_choice("lesson_layer", layer, lesson.layers())
linked_choice("lesson_head", head, checkpoint.heads)
url_state.kept("lesson_layer", None, range(lesson.layers()), default=min(layer, lesson.layers() - 1))
def keep_head() -> None:
    url_state.keep("head", f"{lesson.reader}.{st.session_state['lesson_layer']}.{st.session_state['lesson_head']}")


layer = layer_column.selectbox("Layer", range(lesson.layers()), key="lesson_layer", on_change=keep_head,
                               help=f"Which of the {lesson.reader}'s {lesson.layers()} layers the attention steps "
                                    "look into (the decoder's steps use the same number).")
url_state.kept("lesson_head", None, range(checkpoint.heads), default=min(head, checkpoint.heads - 1))
head = head_column.selectbox("Head", range(checkpoint.heads), key="lesson_head", on_change=keep_head,
                             help="Each layer has several heads: attention computed in parallel with different "
                                  "learned matrices.")
step = 0
if trace.steps and not image:        # a decoder's steps (an image is classified in one)
    outputs = trace.output_tokens
    url_state.kept("lesson_output_step", "step", range(len(outputs)), default=default.step, tokens=outputs)
    step = step_column.selectbox("Output step", range(len(outputs)), key="lesson_output_step",
                                 format_func=lambda i: f"{i}: {outputs[i]}",
                                 on_change=lambda: url_state.keep("step", st.session_state["lesson_output_step"]),
                                 help=f"The decoder's steps follow the step that chose this piece of the "
                                      f"{trace.output_title}.")

# -- the list of steps, and where we are --
url_state.kept("lesson_step", "lesson", slugs, default=slugs[0])


def move(by: int) -> None:
    here = slugs.index(st.session_state.get("lesson_step") or url_state.saved("lesson") or slugs[0])
    st.session_state["lesson_step"] = slugs[min(max(here + by, 0), len(slugs) - 1)]


chosen = st.pills("Steps", slugs, key="lesson_step", format_func=lambda s: f"{slugs.index(s) + 1}. {SHORT_TITLES[s]}",
                  help="Jump to any step; the step is kept in the address, so a link opens on it.")
slug = chosen or url_state.saved("lesson") or slugs[0]      # clicking the open step again keeps it open
url_state.keep("lesson", slug)
number = slugs.index(slug)
shown = lesson.step(slug, Focus(word, -1, layer, head, step))

with step_area if projector else st.container():
    show_step(shown, slug, number, len(slugs), checkpoint, trace.text if not image else None, move, projector)
# The whole Lesson as one offline file, made only when asked (a callable: every step's numbers take ~1 s).
st.download_button("⬇ Lesson as a handout", lambda: handout_html(checkpoint, trace, Focus(word, -1, layer, head, step),
                                                                 label),
                   file_name=f"lesson-{checkpoint.name}.html", mime="text/html", key="lesson_handout",
                   on_click="ignore",
                   help="Every step of this Lesson on your " + ("digit" if image else "sentence") + ", following the "
                        "word, layer and head chosen here, as one HTML file: it opens offline, prints, and reads on "
                        "a phone (python -m explorer lesson writes the same).")
step_keys()                     # ← and → press ◀ Previous and Next ▶
scroll_to_new_step(f"Step {number + 1} of {len(slugs)}")
