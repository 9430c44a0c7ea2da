"""Operations that span aggregates: erasing a member, forgetting a fact, and their traces."""
