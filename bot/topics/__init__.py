"""Idle chats and periodic topic posts."""
