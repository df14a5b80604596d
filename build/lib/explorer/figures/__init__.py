"""Plotly figures and the offline bertviz views, from traces and analyses."""
