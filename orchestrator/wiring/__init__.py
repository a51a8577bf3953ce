"""What the policy makes for each repository: its view, GitHub access, credential, agents."""
