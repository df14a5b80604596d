"""What the page scripts share: the sidebar, the session's choices and cached model, the view in the URL, widgets
(a figure with its downloads, head pickers), corpus jobs, access on a shared server, and the sections two pages
show."""
