"""Small widgets shared by the panes."""
