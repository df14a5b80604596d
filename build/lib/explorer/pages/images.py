"""Images: a Vision Transformer reading a handwritten digit. The digit is cut into patches, each patch a token; a
class token reads them all, layer by layer, and names the digit. Every view is drawn on the image itself."""

from __future__ import annotations

import streamlit as st

from explorer.capture.head_sets import HeadSpecError, format_heads, live_heads, parse_heads
from explorer.capture.image_trace import trace_image
from explorer.capture.inputs import InputError
from explorer.figures.image import class_probabilities, digit_figure
from explorer.pages.components.glossary_links import linked
from explorer.pages.components.image_heads_section import heads_and_accuracy, pruned_heads
from explorer.pages.components.image_input_section import chosen_image
from explorer.pages.components.image_views_section import every_head, one_head, positions, rollout, walkthrough
from explorer.pages.components.session import chosen_model, image_model
from explorer.pages.components.widgets import one_tab_at_a_time, show_figure
from explorer.teaching.wording import plural

model, from_sidebar = image_model()
st.title("Images: attention over a digit")
rows, columns = model.grid
st.caption(f"A {linked('Vision Transformer')} cuts the {model.image_shape[0]} × {model.image_shape[1]} picture into "
           f"{rows * columns} {linked('patch', 'patches')} of {model.patch_size} × {model.patch_size} pixels, each "
           f"one token, and puts a {linked('class token')} before them. Every layer's heads let each token look at "
           "every other; at the top, the class token alone names the digit. "
           f"{model.name}: {model.layers('encoder')} layers × {model.heads} heads.")
if not from_sidebar:
    st.caption(f"The sidebar's model reads text, so this page shows the bundled image model, {model.name}.")
pruned_elsewhere = st.session_state.get("url_pruned", "")
if pruned_elsewhere and not from_sidebar:    # the Prune page's heads are the sidebar's model's, not this one's
    text_model = chosen_model()
    try:
        count = len(parse_heads(pruned_elsewhere, text_model))
    except HeadSpecError:
        count = 0
    if count:
        st.info(f"✂ {plural(count, 'head')} pruned on the [Prune](prune) page belong to {text_model.name}; this page "
                f"shows {model.name}, whose heads you switch off below.")

pixels, description, label = chosen_image(model.image_shape)
pruned = pruned_heads(model)
try:
    trace = trace_image(model, pixels, pruned, description=description)
except InputError as error:
    st.info(str(error))
    st.stop()
if pruned:
    st.info(f"✂ {len(pruned)} heads pruned ({format_heads(pruned)}): every view below shows the model without them.")
left, right = st.columns([1, 2])
with left:
    show_figure(digit_figure(trace.image, description), "image-digit", trace.image)
with right:
    show_figure(class_probabilities(trace, label), "image-classes")
live = live_heads(pruned, model, "encoder")        # pruned heads left out of rollout's averages
one_tab_at_a_time({
    "One head": lambda: one_head(model, trace),
    "Every head": lambda: every_head(model, trace),
    "Rollout": lambda: rollout(model, trace, live),
    "Positions": lambda: positions(model, trace),
    "Q, K, V": lambda: walkthrough(model, trace),
    "Accuracy": lambda: heads_and_accuracy(model, pruned),
}, "image_tab", "section")
