"""The Streamlit app (explorer.pages once installed): its entry app.py, one script per page, components/."""
