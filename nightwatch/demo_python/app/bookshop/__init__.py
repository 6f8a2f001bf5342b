"""bookshop: the small FastAPI service of NightWatch's Python demo."""
