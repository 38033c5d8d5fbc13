"""Backup and restore of everything a person moves to another machine (DESIGN.md §14 "Backup")."""
